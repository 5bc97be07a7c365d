# Correct: undoes the permutation first (rows scattered back to pair order), then a weighted sum over K per token.
from __future__ import annotations

import torch


def ep_combine(expert_out: torch.Tensor, order: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    if expert_out.ndim != 2:
        raise ValueError(f"expert_out must be 2-D, got {expert_out.ndim} dimensions")
    t, k = topk_weights.shape
    if tuple(order.shape) != (t * k,) or expert_out.shape[0] != t * k:
        raise ValueError(f"order {tuple(order.shape)} / expert_out {tuple(expert_out.shape)} do not match {t}x{k} pairs")
    by_pair = torch.empty(t * k, expert_out.shape[1], dtype=torch.float32)
    by_pair[order] = expert_out.to(torch.float32)
    summed = (by_pair.view(t, k, expert_out.shape[1]) * topk_weights.to(torch.float32).unsqueeze(-1)).sum(dim=1)
    return summed.to(expert_out.dtype)
