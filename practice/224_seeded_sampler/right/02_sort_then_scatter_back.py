# Correct: Applies top-k and top-p in sorted order (one stable descending sort) and scatters the kept probabilities back, greedy decided with <= threshold written as not >=.
"""Exercise 224: a batched sampler with a random stream per request."""
from __future__ import annotations

import torch


def _filtered_probs(row: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    values, order = row.sort(descending=True, stable=True)
    if top_k not in (0, -1) and top_k < row.numel():
        values = values.masked_fill(values < values[top_k - 1], float("-inf"))
    sorted_probs = values.softmax(-1)
    if top_p < 1:
        before = sorted_probs.cumsum(-1) - sorted_probs
        keep = before < top_p
        keep[0] = True
        sorted_probs = sorted_probs * keep
        sorted_probs = sorted_probs / sorted_probs.sum()
    return torch.zeros_like(sorted_probs).scatter(0, order, sorted_probs)


def sample(logits: torch.Tensor, temperatures: list[float], top_ks: list[int], top_ps: list[float],
           generators: list[torch.Generator | None]) -> list[int]:
    tokens = []
    for i, row in enumerate(logits.float()):
        if not temperatures[i] >= 1e-5:
            tokens.append(int(row.argmax()))
            continue
        probs = _filtered_probs(row / temperatures[i], top_ks[i], top_ps[i])
        tokens.append(int(torch.multinomial(probs, 1, generator=generators[i])))
    return tokens
