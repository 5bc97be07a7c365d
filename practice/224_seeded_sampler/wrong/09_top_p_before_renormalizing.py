# Mistake: Zeroes the tokens below the k-th largest probability without renormalizing, so top-p accumulates the old probabilities (mass below 1) and keeps too many tokens.
"""Exercise 224: a batched sampler with a random stream per request."""
from __future__ import annotations

import torch


def _filtered_probs(row: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    probs = row.softmax(-1)
    if 0 < top_k < row.numel():
        kth = probs.topk(top_k).values[-1]
        probs = probs.masked_fill(probs < kth, 0.0)
    if top_p < 1:
        sorted_probs, order = probs.sort(descending=True, stable=True)  # ties: lower id first
        drop = (sorted_probs.cumsum(-1) - sorted_probs) >= top_p
        drop[0] = False
        probs = probs.masked_fill(torch.zeros_like(drop).scatter(0, order, drop), 0.0)
    return probs


def sample(logits: torch.Tensor, temperatures: list[float], top_ks: list[int], top_ps: list[float],
           generators: list[torch.Generator | None]) -> list[int]:
    tokens = []
    for i, row in enumerate(logits.float()):
        if temperatures[i] < 1e-5:
            tokens.append(int(row.argmax()))
            continue
        probs = _filtered_probs(row / temperatures[i], top_ks[i], top_ps[i])
        tokens.append(int(torch.multinomial(probs, 1, generator=generators[i])))
    return tokens
