# Correct: Finds the greedy token with logits.index(max(logits)) and skips top-p with a top_p >= 1 test.
"""Exercise 223: temperature, top-k and top-p."""
from __future__ import annotations

import math


def _normalize(probs: list[float]) -> list[float]:
    total = sum(probs)
    return [p / total for p in probs]


def sampling_probs(logits: list[float], temperature: float, top_k: int, top_p: float) -> list[float]:
    if temperature == 0:
        best = logits.index(max(logits))
        return [1.0 if i == best else 0.0 for i in range(len(logits))]
    scaled = [x / temperature for x in logits]
    peak = max(scaled)
    probs = _normalize([math.exp(x - peak) for x in scaled])
    if 0 < top_k < len(probs):
        kth = sorted(probs, reverse=True)[top_k - 1]
        probs = _normalize([p if p >= kth else 0.0 for p in probs])
    if not top_p >= 1:
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
        kept, mass = [0.0] * len(probs), 0.0
        for rank, i in enumerate(order):
            if rank > 0 and mass >= top_p:
                break
            kept[i] = probs[i]
            mass += probs[i]
        probs = _normalize(kept)
    return probs
