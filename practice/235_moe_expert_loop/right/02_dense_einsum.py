# Correct: runs every local expert on every token with einsum and combines them through a [T, E_local] weight matrix built with scatter_add_ (a dense formulation, same result).
from __future__ import annotations

import torch
import torch.nn.functional as F


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    if w13.dim() != 3 or w13.size(1) % 2 or w13.size(2) != hidden.size(1):
        raise ValueError(f"w13 must be [E_local, 2*I, H], got {tuple(w13.shape)}")
    e_local, inter = w13.size(0), w13.size(1) // 2
    if w2.shape != (e_local, hidden.size(1), inter):
        raise ValueError(f"w2 must be {(e_local, hidden.size(1), inter)}, got {tuple(w2.shape)}")
    ids = topk_ids.to(torch.int64)
    limit = e_local if expert_map is None else expert_map.shape[0]
    if ((ids < 0) | (ids >= limit)).any():
        raise ValueError(f"topk_ids outside [0, {limit})")
    local = ids if expert_map is None else expert_map.to(torch.int64).index_select(0, ids.flatten()).view_as(ids)
    elsewhere = local < 0
    mix = torch.zeros(hidden.size(0), e_local + 1, dtype=torch.float32)
    mix.scatter_add_(1, torch.where(elsewhere, e_local, local), topk_weights.float())
    x = hidden.float()
    h = torch.einsum("th,eih->tei", x, w13.float())
    act = F.silu(h[..., :inter]) * h[..., inter:]
    y = torch.einsum("tei,ehi->teh", act, w2.float())
    return torch.einsum("te,teh->th", mix[:, :e_local], y).to(hidden.dtype)
