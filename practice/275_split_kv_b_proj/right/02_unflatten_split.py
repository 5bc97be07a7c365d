# Correct: unflattens the rows into heads, uses torch.split along the per-head rows, and clones with contiguous_format.
from __future__ import annotations

import torch


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    if len(weight.shape) != 2 or weight.size(0) != num_heads * (qk_nope_head_dim + v_head_dim):
        raise ValueError("kv_b_proj weight has the wrong shape")
    heads = weight.unflatten(0, (num_heads, qk_nope_head_dim + v_head_dim))
    w_uk, w_uv = torch.split(heads, [qk_nope_head_dim, v_head_dim], dim=1)
    return w_uk.clone(memory_format=torch.contiguous_format), w_uv.clone(memory_format=torch.contiguous_format)
