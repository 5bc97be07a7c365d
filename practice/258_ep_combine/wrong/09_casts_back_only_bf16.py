# Mistake: Casts back only for bf16 input (bf16 in, bf16 out), so an fp16 expert_out gives an fp32 result.
from __future__ import annotations

import torch


def ep_combine(expert_out: torch.Tensor, order: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    num_tokens, top_k = topk_weights.shape
    if order.shape != (num_tokens * top_k,) or expert_out.dim() != 2 or expert_out.shape[0] != order.shape[0]:
        raise ValueError(f"need order [{num_tokens * top_k}] and expert_out [{num_tokens * top_k}, H] for "
                         f"topk_weights {tuple(topk_weights.shape)}, got {tuple(order.shape)} and "
                         f"{tuple(expert_out.shape)}")
    weights = topk_weights.reshape(-1)[order].float()              # row i is pair order[i]
    weighted = expert_out.float() * weights.unsqueeze(1)
    out = torch.zeros(num_tokens, expert_out.shape[1], dtype=torch.float32, device=expert_out.device)
    out.index_add_(0, order // top_k, weighted)   # pair p is token p // K
    return out.bfloat16() if expert_out.dtype == torch.bfloat16 else out
