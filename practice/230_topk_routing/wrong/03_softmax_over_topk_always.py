# Mistake: takes the softmax over the k chosen logits only, which equals renormalising, so renormalize=False is ignored.
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
        chosen = sorted(range(num_experts), key=lambda e: (-row[e], e))[:k]
        top = row[chosen[0]]
        exps = [math.exp(row[e] - top) for e in chosen]
        weights.append([v / sum(exps) for v in exps])
        ids.append(chosen)
    return weights, ids
