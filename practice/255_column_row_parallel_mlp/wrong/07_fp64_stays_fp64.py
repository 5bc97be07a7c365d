# Mistake: Promotes to at least fp32 (torch.promote_types) instead of computing in fp32, so fp64 inputs give an fp64 result.
from __future__ import annotations

import torch
import torch.nn.functional as F


def shard_gated_mlp(gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                    tp_rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    intermediate = gate.shape[0]
    if intermediate % tp_size:
        raise ValueError(f"intermediate size {intermediate} is not divisible by tp_size={tp_size}")
    s = intermediate // tp_size
    rows = slice(tp_rank * s, (tp_rank + 1) * s)
    return torch.cat([gate[rows], up[rows]]), down[:, rows]


def rank_partial(x: torch.Tensor, gate_up: torch.Tensor, down_shard: torch.Tensor) -> torch.Tensor:
    dtype = torch.promote_types(x.dtype, torch.float32)       # never below fp32
    g, u = F.linear(x.to(dtype), gate_up.to(dtype)).chunk(2, dim=-1)
    return F.linear(F.silu(g) * u, down_shard.to(dtype))


def tensor_parallel_mlp(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                        down_bias: torch.Tensor | None = None) -> torch.Tensor:
    out = sum(rank_partial(x, *shard_gated_mlp(gate, up, down, tp_size, r)) for r in range(tp_size))
    return out if down_bias is None else out + down_bias.float()
