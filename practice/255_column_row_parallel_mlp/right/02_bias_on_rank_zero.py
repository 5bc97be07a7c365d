# Correct: adds the bias to rank 0's partial before the sum (as the engine's RowParallelLinear does), stacks and sums the partials.
from __future__ import annotations

import torch
import torch.nn.functional as F


def shard_gated_mlp(gate, up, down, tp_size, tp_rank):
    size, rest = divmod(gate.shape[0], tp_size)
    if rest:
        raise ValueError("intermediate_size must be divisible by tp_size")
    lo, hi = tp_rank * size, (tp_rank + 1) * size
    return torch.cat([gate[lo:hi], up[lo:hi]]), down[:, lo:hi].clone()


def rank_partial(x, gate_up, down_shard):
    s = down_shard.shape[1]
    h = F.linear(x.float(), gate_up.float())
    return F.linear(F.silu(h[:, :s]) * h[:, s:], down_shard.float())


def tensor_parallel_mlp(x, gate, up, down, tp_size, down_bias=None):
    partials = []
    for rank in range(tp_size):
        part = rank_partial(x, *shard_gated_mlp(gate, up, down, tp_size, rank))
        if rank == 0 and down_bias is not None:
            part = part + down_bias.float()
        partials.append(part)
    return torch.stack(partials).sum(0)
