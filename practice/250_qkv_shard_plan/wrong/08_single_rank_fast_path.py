# Mistake: Checks the head counts, then returns the whole model for a single rank before checking tp_rank, so rank 1 (or -1) of 1 is accepted.
from __future__ import annotations

from typing import NamedTuple


class HeadShard(NamedTuple):
    """What head_shard returns (the engine's own named tuple has the same fields)."""
    num_heads: int
    num_kv_heads: int
    q_start: int
    kv_start: int
    kv_replicas: int


def head_shard(total_heads: int, total_kv_heads: int, tp_size: int, tp_rank: int) -> HeadShard:
    if min(total_heads, total_kv_heads) < 1 or total_heads % total_kv_heads:
        raise ValueError(f"total_heads={total_heads} must be a positive multiple of total_kv_heads={total_kv_heads}")
    if tp_size == 1:                      # one rank holds everything: nothing to split
        return HeadShard(total_heads, total_kv_heads, 0, 0, 1)
    if tp_size < 1 or not 0 <= tp_rank < tp_size:
        raise ValueError(f"need tp_size >= 1 and 0 <= tp_rank < tp_size, got {tp_size} and {tp_rank}")
    if total_heads % tp_size:
        raise ValueError(f"total_heads={total_heads} is not divisible by tp_size={tp_size}")
    num_heads = total_heads // tp_size
    if tp_size >= total_kv_heads:
        if tp_size % total_kv_heads:
            raise ValueError("cannot replicate evenly")
        replicas = tp_size // total_kv_heads
        return HeadShard(num_heads, 1, tp_rank * num_heads, tp_rank // replicas, replicas)
    if total_kv_heads % tp_size:
        raise ValueError(f"total_kv_heads={total_kv_heads} is not divisible by tp_size={tp_size}")
    num_kv = total_kv_heads // tp_size
    return HeadShard(num_heads, num_kv, tp_rank * num_heads, tp_rank * num_kv, 1)
