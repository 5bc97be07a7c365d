# Mistake: Takes the rows with torch.chunk and never checks divisibility, so an intermediate size that does not split is accepted for the first ranks.
from __future__ import annotations

import torch
import torch.nn.functional as F


def shard_gated_mlp(gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                    tp_rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.chunk(gate, tp_size)[tp_rank]
    u = torch.chunk(up, tp_size)[tp_rank]
    d = torch.chunk(down, tp_size, dim=1)[tp_rank]
    return torch.cat([g, u]), d


def rank_partial(x: torch.Tensor, gate_up: torch.Tensor, down_shard: torch.Tensor) -> torch.Tensor:
    g, u = F.linear(x.float(), gate_up.float()).chunk(2, dim=-1)
    return F.linear(F.silu(g) * u, down_shard.float())


def tensor_parallel_mlp(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor, tp_size: int,
                        down_bias: torch.Tensor | None = None) -> torch.Tensor:
    out = sum(rank_partial(x, *shard_gated_mlp(gate, up, down, tp_size, r)) for r in range(tp_size))
    return out if down_bias is None else out + down_bias.float()
