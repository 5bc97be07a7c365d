"""Gated activation in plain torch: the specification of ``silu_and_mul``."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``silu(x[..., :d]) * x[..., d:]`` for x ``[..., 2d]``, in fp32, returned in x's dtype."""
    if x.shape[-1] % 2:
        raise ValueError(f"silu_and_mul needs an even last dimension (gate and up halves), got {x.shape[-1]}")
    gate, up = x.float().chunk(2, dim=-1)
    return (F.silu(gate) * up).to(x.dtype)
