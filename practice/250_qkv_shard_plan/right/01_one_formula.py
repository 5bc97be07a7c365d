# Correct: one formula for both cases (as hint 3), the GQA check before the rank check, other messages.
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
    if total_heads < 1 or total_kv_heads < 1:
        raise ValueError("head counts must be positive")
    if total_heads % total_kv_heads != 0:
        raise ValueError("not a GQA layout")
    if tp_size < 1:
        raise ValueError("tp_size must be positive")
    if tp_rank < 0 or tp_rank >= tp_size:
        raise ValueError("tp_rank out of range")
    if total_heads % tp_size != 0:
        raise ValueError("query heads do not split")
    if tp_size < total_kv_heads:
        if total_kv_heads % tp_size != 0:
            raise ValueError("KV heads do not split")
        num_kv, replicas = total_kv_heads // tp_size, 1
    else:
        if tp_size % total_kv_heads != 0:
            raise ValueError("KV heads do not replicate evenly")
        num_kv, replicas = 1, tp_size // total_kv_heads
    num_heads = total_heads // tp_size
    return HeadShard(num_heads, num_kv, tp_rank * num_heads, (tp_rank // replicas) * num_kv, replicas)
