# Mistake: returns the slices as they are, views that are not contiguous.
"""Exercise 275: split kv_b_proj into each head's W_UK and W_UV."""
from __future__ import annotations

import torch


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    if weight.dim() != 2 or weight.shape[0] != num_heads * (qk_nope_head_dim + v_head_dim):
        raise ValueError(f"kv_b_proj weight must be [num_heads * (qk_nope_head_dim + v_head_dim) = "
                         f"{num_heads} * ({qk_nope_head_dim} + {v_head_dim}), kv_lora_rank], got {tuple(weight.shape)}")
    per_head = weight.view(num_heads, qk_nope_head_dim + v_head_dim, weight.shape[1])
    return per_head[:, :qk_nope_head_dim], per_head[:, qk_nope_head_dim:]
