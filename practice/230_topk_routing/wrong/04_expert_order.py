# Mistake: returns the chosen experts sorted by expert index instead of by descending probability.
from __future__ import annotations

import math


def topk_softmax(logits, k, renormalize):
    if not logits:
        return [], []
    num_experts = len(logits[0])
    if any(len(row) != num_experts for row in logits) or num_experts == 0:
        raise ValueError("rows must have the same, non-zero length")
    if not 1 <= k <= num_experts:
        raise ValueError(f"k must be in [1, {num_experts}]")
    weights, ids = [], []
    for row in logits:
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        probs = [e / sum(exps) for e in exps]
        chosen = sorted(sorted(range(num_experts), key=lambda e: (-probs[e], e))[:k])
        w = [probs[e] for e in chosen]
        if renormalize:
            w = [v / sum(w) for v in w]
        weights.append(w)
        ids.append(chosen)
    return weights, ids
