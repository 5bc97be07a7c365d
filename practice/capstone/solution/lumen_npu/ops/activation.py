"""SiLU-and-multiply on Lumen: the first half of the last dimension is the gate."""
from __future__ import annotations

import torch


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    gate, up = x.chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate.float()) * up.float()).to(x.dtype)
