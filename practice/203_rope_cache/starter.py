"""Exercise 203: the RoPE cos/sin cache and applying it (neox and interleaved styles).

Fill in the TODOs.
"""
from __future__ import annotations

import torch


def rope_cos_sin_cache(head_dim: int, max_positions: int, theta: float = 10000.0) -> torch.Tensor:
    """[max_positions, head_dim] float32: cos(p * f_i) in the first half, sin(p * f_i) in the second,
    with f_i = theta ** (-2i / head_dim). Odd head_dim -> ValueError."""
    raise NotImplementedError("TODO: implement rope_cos_sin_cache")


def apply_rope(x: torch.Tensor, positions: torch.Tensor, cache: torch.Tensor, neox: bool = True) -> torch.Tensor:
    """Rotate x [T, heads, head_dim] by the angles of `positions`; a new tensor of x's dtype.

    neox=True pairs (x[i], x[i + d/2]); neox=False pairs (x[2i], x[2i+1]).
    """
    raise NotImplementedError("TODO: implement apply_rope")
