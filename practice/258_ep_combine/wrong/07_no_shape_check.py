# Mistake: Does not check the shapes, so a missing pair or row is silently dropped or crashes in index_add_.
from __future__ import annotations

import torch


def ep_combine(expert_out: torch.Tensor, order: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    num_tokens, top_k = topk_weights.shape
    weights = topk_weights.reshape(-1)[order].float()              # row i is pair order[i]
    weighted = expert_out.float() * weights.unsqueeze(1)
    out = torch.zeros(num_tokens, expert_out.shape[1], dtype=torch.float32, device=expert_out.device)
    return out.index_add_(0, order // top_k, weighted).to(expert_out.dtype)   # pair p is token p // K
