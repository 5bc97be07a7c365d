# Mistake: Sorts (probability, index) pairs in reverse for top-p, so among equal probabilities the higher index comes first.
"""Exercise 223: temperature, top-k and top-p."""
from __future__ import annotations

import math


def _normalize(probs: list[float]) -> list[float]:
    total = sum(probs)
    return [p / total for p in probs]


def sampling_probs(logits: list[float], temperature: float, top_k: int, top_p: float) -> list[float]:
    if temperature == 0:
        best = max(range(len(logits)), key=lambda i: (logits[i], -i))
        return [1.0 if i == best else 0.0 for i in range(len(logits))]
    scaled = [x / temperature for x in logits]
    peak = max(scaled)
    probs = _normalize([math.exp(x - peak) for x in scaled])
    if 0 < top_k < len(probs):
        kth = sorted(probs, reverse=True)[top_k - 1]
        probs = _normalize([p if p >= kth else 0.0 for p in probs])
    if top_p < 1:
        order = [i for _, i in sorted(zip(probs, range(len(probs))), reverse=True)]
        kept, mass = [0.0] * len(probs), 0.0
        for rank, i in enumerate(order):
            if rank > 0 and mass >= top_p:
                break
            kept[i] = probs[i]
            mass += probs[i]
        probs = _normalize(kept)
    return probs
