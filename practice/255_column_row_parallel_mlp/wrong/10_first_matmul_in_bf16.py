# Mistake: Runs the gate/up matmul in the input dtype and converts to fp32 only afterwards.
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
    g, u = F.linear(x, gate_up).float().chunk(2, dim=-1)
    return F.linear(F.silu(g) * u, down_shard.float())


def tensor_parallel_mlp(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                        down_bias: torch.Tensor | None = None) -> torch.Tensor:
    out = sum(rank_partial(x, *shard_gated_mlp(gate, up, down, tp_size, r)) for r in range(tp_size))
    return out if down_bias is None else out + down_bias.float()
