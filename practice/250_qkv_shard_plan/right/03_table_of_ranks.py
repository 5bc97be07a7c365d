# Correct: builds the whole plan of every rank by walking the heads, then picks tp_rank's entry.
from __future__ import annotations

from typing import NamedTuple


class HeadShard(NamedTuple):
    num_heads: int
    num_kv_heads: int
    q_start: int
    kv_start: int
    kv_replicas: int


def head_shard(total_heads: int, total_kv_heads: int, tp_size: int, tp_rank: int) -> HeadShard:
    if not (tp_size >= 1 and 0 <= tp_rank < tp_size and total_heads >= 1 and total_kv_heads >= 1):
        raise ValueError(f"bad sizes or rank: {total_heads}, {total_kv_heads}, {tp_size}, {tp_rank}")
    if total_heads % total_kv_heads or total_heads % tp_size:
        raise ValueError("heads do not divide")
    if (tp_size < total_kv_heads and total_kv_heads % tp_size) or (tp_size >= total_kv_heads and tp_size % total_kv_heads):
        raise ValueError("KV heads can be neither split nor replicated evenly")
    per_rank = total_heads // tp_size
    plans = []
    for r in range(tp_size):
        if tp_size >= total_kv_heads:
            copies = tp_size // total_kv_heads
            plans.append(HeadShard(per_rank, 1, r * per_rank, r // copies, copies))
        else:
            kv = total_kv_heads // tp_size
            plans.append(HeadShard(per_rank, kv, r * per_rank, r * kv, 1))
    return plans[tp_rank]
