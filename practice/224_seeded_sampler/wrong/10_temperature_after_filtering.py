# Mistake: Filters with top-k/top-p on the untempered distribution and applies the temperature only to the draw, so top-p keeps the wrong tokens when the temperature is not 1.
"""Exercise 224: a batched sampler with a random stream per request."""
from __future__ import annotations

import torch


def _filtered_probs(row: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    if 0 < top_k < row.numel():
        kth = row.topk(top_k).values[-1]
        row = row.masked_fill(row < kth, float("-inf"))
    probs = row.softmax(-1)
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
        kept = _filtered_probs(row, top_ks[i], top_ps[i]) > 0
        probs = (row / temperatures[i]).masked_fill(~kept, float("-inf")).softmax(-1)
        tokens.append(int(torch.multinomial(probs, 1, generator=generators[i])))
    return tokens
