"""Exercise 224: a batched sampler with a random stream per request. Keep the names."""
from __future__ import annotations

import torch


def sample(logits: torch.Tensor, temperatures: list[float], top_ks: list[int], top_ps: list[float],
           generators: list[torch.Generator | None]) -> list[int]:
    # TODO: argmax for a temperature below 1e-5; else temperature, top-k, top-p, then one draw per row
    #       with that row's generator (torch.multinomial(probs, 1, generator=g) draws one token)
    raise NotImplementedError("sample")
