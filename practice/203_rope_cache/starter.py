"""Exercise 203: the RoPE cos/sin cache and applying it (neox and interleaved styles).

Fill in the TODOs.
"""
from __future__ import annotations

from typing import Any

import torch

from mini_platform.model.layers import rope_attention_factor, rope_inv_freq  # for `scaling` (given)


def rope_cos_sin_cache(head_dim: int, max_positions: int, theta: float,
                       scaling: dict[str, Any] | None = None) -> torch.Tensor:
    """[max_positions, head_dim] float32: cos(p * f_i) in the first half, sin(p * f_i) in the second,
    with f_i = 1 / theta ** (2i / head_dim) (computed as transformers does). Odd head_dim -> ValueError.

    scaling None: plain RoPE. Otherwise f = rope_inv_freq(head_dim, theta, scaling) and the whole table
    is multiplied by rope_attention_factor(scaling)."""
    raise NotImplementedError("TODO: implement rope_cos_sin_cache")


def apply_rope(x: torch.Tensor, positions: torch.Tensor, cache: torch.Tensor, neox: bool = True) -> torch.Tensor:
    """Rotate x [T, heads, head_dim] by the angles of `positions`; a new tensor of x's dtype.

    neox=True pairs (x[i], x[i + d/2]); neox=False pairs (x[2i], x[2i+1]).
    """
    raise NotImplementedError("TODO: implement apply_rope")
