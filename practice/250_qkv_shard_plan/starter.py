"""Exercise 250: the tensor-parallel shard plan of a QKV layer under GQA. Keep the names."""
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
    """Rank tp_rank's HeadShard(num_heads, num_kv_heads, q_start, kv_start, kv_replicas); see problem.md."""
    # TODO: validate the rank and the error cases
    # TODO: query heads split evenly
    # TODO: KV heads split (tp_size < total_kv_heads) or one each, replicated (tp_size >= total_kv_heads)
    raise NotImplementedError("head_shard")
