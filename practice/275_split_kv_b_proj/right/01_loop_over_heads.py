# Correct: walks the heads with a row offset, stacks the slices with torch.stack (a fresh contiguous tensor), and checks with its own message.
from __future__ import annotations

import torch


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    per_head = qk_nope_head_dim + v_head_dim
    if weight.ndim != 2:
        raise ValueError(f"expected a 2-D kv_b_proj weight, got {weight.ndim}-D")
    if weight.shape[0] != num_heads * per_head:
        raise ValueError(f"{weight.shape[0]} rows do not hold {num_heads} heads of {per_head} rows")
    uk, uv = [], []
    for h in range(num_heads):
        start = h * per_head
        uk.append(weight[start:start + qk_nope_head_dim])
        uv.append(weight[start + qk_nope_head_dim:start + per_head])
    return torch.stack(uk), torch.stack(uv)
