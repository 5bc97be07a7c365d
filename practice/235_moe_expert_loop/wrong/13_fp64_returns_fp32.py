# Mistake: Converts back only for the half types (bf16, fp16) and returns the fp32 accumulator for fp64 hidden.
from __future__ import annotations

import torch
import torch.nn.functional as F


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    num_local, two_inter, h = w13.shape
    if two_inter % 2 or tuple(w2.shape) != (num_local, h, two_inter // 2) or hidden.shape[-1] != h:
        raise ValueError(f"w13 {tuple(w13.shape)} and w2 {tuple(w2.shape)} do not fit hidden {tuple(hidden.shape)}")
    num_experts = num_local if expert_map is None else expert_map.numel()
    ids = topk_ids.long()
    if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < num_experts):
        raise ValueError(f"topk_ids must lie in [0, {num_experts})")
    local = ids if expert_map is None else expert_map.long()[ids]
    x = hidden.float()
    out = torch.zeros(x.shape, dtype=torch.float32)
    for e in range(num_local):
        tokens, slots = torch.nonzero(local == e, as_tuple=True)
        if tokens.numel() == 0:
            continue
        gate, up = (x[tokens] @ w13[e].float().T).chunk(2, dim=-1)
        y = (F.silu(gate) * up) @ w2[e].float().T
        out.index_add_(0, tokens, y * topk_weights[tokens, slots].float()[:, None])
    return out.to(hidden.dtype) if hidden.dtype in (torch.float16, torch.bfloat16) else out
