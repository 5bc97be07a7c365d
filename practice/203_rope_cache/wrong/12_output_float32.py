# Mistake: Returns the float32 result without casting back to x's dtype.
"""Exercise 203 (reference): the RoPE cos/sin cache and applying it."""
from __future__ import annotations

from typing import Any

import torch

from mini_platform.model.layers import rope_attention_factor, rope_inv_freq


def rope_cos_sin_cache(head_dim: int, max_positions: int, theta: float,
                       scaling: dict[str, Any] | None = None) -> torch.Tensor:
    """[max_positions, head_dim] float32: cos in the first half, sin in the second."""
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    if scaling is None:  # plain RoPE
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        factor = 1.0
    else:  # linear, llama3, yarn: the engine's frequencies and factor
        inv_freq, factor = rope_inv_freq(head_dim, theta, scaling), rope_attention_factor(scaling)
    angles = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
    return torch.cat((angles.cos(), angles.sin()), dim=-1) * factor


def apply_rope(x: torch.Tensor, positions: torch.Tensor, cache: torch.Tensor, neox: bool = True) -> torch.Tensor:
    """Rotate x [T, heads, head_dim] by the angles of `positions`; a new tensor of x's dtype."""
    cos, sin = cache[positions.long()].float()[:, None, :].chunk(2, dim=-1)   # [T, 1, d/2] each
    xf = x.float()
    if neox:
        a, b = xf.chunk(2, dim=-1)
        out = torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)
    else:
        a, b = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)
    return out
