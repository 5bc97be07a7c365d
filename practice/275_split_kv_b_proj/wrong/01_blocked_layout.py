# Mistake: takes all heads' W_UK rows first and all W_UV rows after, instead of interleaved per head.
"""Exercise 275: split kv_b_proj into each head's W_UK and W_UV."""
from __future__ import annotations

import torch


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    if weight.dim() != 2 or weight.shape[0] != num_heads * (qk_nope_head_dim + v_head_dim):
        raise ValueError(f"kv_b_proj weight must be [num_heads * (qk_nope_head_dim + v_head_dim) = "
                         f"{num_heads} * ({qk_nope_head_dim} + {v_head_dim}), kv_lora_rank], got {tuple(weight.shape)}")
    rank = weight.shape[1]
    w_uk = weight[:num_heads * qk_nope_head_dim].view(num_heads, qk_nope_head_dim, rank)
    w_uv = weight[num_heads * qk_nope_head_dim:].view(num_heads, v_head_dim, rank)
    return w_uk.contiguous(), w_uv.contiguous()
