"""Exercise 230: softmax top-k routing with renormalisation and a fixed tie rule (solution)."""
from __future__ import annotations

import math


def topk_softmax(logits: list[list[float]], k: int,
                 renormalize: bool) -> tuple[list[list[float]], list[list[int]]]:
    if not logits:
        return [], []
    num_experts = len(logits[0])
    if any(len(row) != num_experts for row in logits) or num_experts == 0:
        raise ValueError("every row of logits must hold the same, non-zero number of experts")
    if not 1 <= k <= num_experts:
        raise ValueError(f"k must be in [1, {num_experts}], got {k}")
    weights, ids = [], []
    for row in logits:
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = sum(exps)
        probs = [e / total for e in exps]
        chosen = sorted(range(num_experts), key=lambda e: (-probs[e], e))[:k]
        w = [probs[e] for e in chosen]
        if renormalize:
            s = sum(w)
            w = [v / s for v in w]
        weights.append(w)
        ids.append(chosen)
    return weights, ids
