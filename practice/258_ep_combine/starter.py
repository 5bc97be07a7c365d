"""Exercise 258: the combine of an expert-parallel exchange, a weighted sum per token. Keep the names."""
from __future__ import annotations

import torch


def ep_combine(expert_out: torch.Tensor, order: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    """[T, H] in expert_out's dtype: row t = sum_k topk_weights[t, k] * output of pair t*K+k (fp32 inside)."""
    # TODO: check the shapes
    # TODO: the token and the weight of each returned row (it is pair order[i]); add the weighted rows per token
    raise NotImplementedError("ep_combine")
