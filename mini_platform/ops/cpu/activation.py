"""Gated activation in plain torch: the specification of ``silu_and_mul``."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import compiled


def check_gate_up(x: torch.Tensor) -> None:
    """The last dim holds the gate and up halves, so it must be even (every backend relies on it)."""
    if x.shape[-1] % 2:
        raise ValueError(f"silu_and_mul needs an even last dimension (gate and up halves), got {x.shape[-1]}")


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``silu(x[..., :d]) * x[..., d:]`` for x ``[..., 2d]``, in fp32, returned in x's dtype."""
    check_gate_up(x)
    if compiled.available_widened(x):
        return compiled.silu_and_mul(x)   # fp32 or bf16 with numba: one call instead of five
    gate, up = x.float().chunk(2, dim=-1)
    return (F.silu(gate) * up).to(x.dtype)
