# Correct: torch.chunk after the divisibility check, `@` with transposes, SiLU written as g * sigmoid(g).
from __future__ import annotations

import torch


def shard_gated_mlp(gate, up, down, tp_size, tp_rank):
    if gate.shape[0] % tp_size != 0:
        raise ValueError(f"cannot split {gate.shape[0]} intermediate rows over {tp_size} ranks")
    g = torch.chunk(gate, tp_size, dim=0)[tp_rank]
    u = torch.chunk(up, tp_size, dim=0)[tp_rank]
    d = torch.chunk(down, tp_size, dim=1)[tp_rank]
    return torch.cat((g, u), dim=0), d


def rank_partial(x, gate_up, down_shard):
    x32 = x.to(torch.float32)
    both = x32 @ gate_up.to(torch.float32).t()
    half = both.shape[-1] // 2
    g, u = both[..., :half], both[..., half:]
    return (g * torch.sigmoid(g) * u) @ down_shard.to(torch.float32).t()


def tensor_parallel_mlp(x, gate, up, down, tp_size, down_bias=None):
    total = torch.zeros(x.shape[0], down.shape[0], dtype=torch.float32)
    for rank in range(tp_size):
        total += rank_partial(x, *shard_gated_mlp(gate, up, down, tp_size, rank))
    if down_bias is not None:
        total += down_bias.to(torch.float32)
    return total
