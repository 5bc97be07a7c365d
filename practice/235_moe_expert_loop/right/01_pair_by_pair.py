# Correct: loops over every (token, choice) pair instead of over experts, with F.linear in fp32; checks the ids before the weight shapes.
from __future__ import annotations

import torch
import torch.nn.functional as F


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    e_local = w13.shape[0]
    e_global = e_local if expert_map is None else len(expert_map)
    ids = topk_ids.tolist()
    if any(not 0 <= g < e_global for row in ids for g in row):
        raise ValueError("expert id out of range")
    if w13.dim() != 3 or w13.shape[1] % 2 != 0 or w13.shape[2] != hidden.shape[1]:
        raise ValueError("w13 has a bad shape")
    inter = w13.shape[1] // 2
    if list(w2.shape) != [e_local, hidden.shape[1], inter]:
        raise ValueError("w2 has a bad shape")
    table = list(range(e_local)) if expert_map is None else expert_map.tolist()
    out = torch.zeros(hidden.shape, dtype=torch.float32)
    for t, row in enumerate(ids):
        x = hidden[t].float()
        for j, g in enumerate(row):
            e = table[g]
            if e == -1:
                continue
            h = F.linear(x, w13[e].float())
            y = F.linear(F.silu(h[:inter]) * h[inter:], w2[e].float())
            out[t] += topk_weights[t, j].float() * y
    return out.to(hidden.dtype)
