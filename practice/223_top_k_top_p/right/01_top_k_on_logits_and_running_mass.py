# Correct: Applies top-k to the scaled logits (a monotone map of the probabilities) before the softmax, and top-p by stable descending sort of indices.
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
    keep = [True] * len(scaled)
    if top_k not in (0, -1) and top_k < len(scaled):
        kth = sorted(scaled, reverse=True)[top_k - 1]
        keep = [x >= kth for x in scaled]
    probs = _normalize([math.exp(x - peak) if k else 0.0 for x, k in zip(scaled, keep)])
    if top_p < 1:
        order = sorted(range(len(probs)), key=lambda i: probs[i], reverse=True)  # stable: ties keep index order
        kept, mass = [0.0] * len(probs), 0.0
        for rank, i in enumerate(order):
            if rank > 0 and mass >= top_p:
                break
            kept[i] = probs[i]
            mass += probs[i]
        probs = _normalize(kept)
    return probs
