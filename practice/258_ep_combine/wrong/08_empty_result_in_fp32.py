# Mistake: Returns an empty fp32 tensor for zero tokens, forgetting that the result takes expert_out's dtype then too.
from __future__ import annotations

import torch


def ep_combine(expert_out: torch.Tensor, order: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    num_tokens, top_k = topk_weights.shape
    if order.shape != (num_tokens * top_k,) or expert_out.dim() != 2 or expert_out.shape[0] != order.shape[0]:
        raise ValueError(f"need order [{num_tokens * top_k}] and expert_out [{num_tokens * top_k}, H] for "
                         f"topk_weights {tuple(topk_weights.shape)}, got {tuple(order.shape)} and "
                         f"{tuple(expert_out.shape)}")
    if num_tokens == 0:
        return torch.zeros(0, expert_out.shape[1])
    weights = topk_weights.reshape(-1)[order].float()              # row i is pair order[i]
    weighted = expert_out.float() * weights.unsqueeze(1)
    out = torch.zeros(num_tokens, expert_out.shape[1], dtype=torch.float32, device=expert_out.device)
    return out.index_add_(0, order // top_k, weighted).to(expert_out.dtype)   # pair p is token p // K
