"""Exercise 250: the tensor-parallel shard plan of a QKV layer under GQA. Keep the names."""
from __future__ import annotations


def qkv_shard_plan(num_heads: int, num_kv_heads: int, head_dim: int, tp_size: int) -> list[dict]:
    """One dict per rank: q_heads, kv_heads, kv_replicas, q_rows, kv_rows (see problem.md)."""
    # TODO: validate the five error cases
    # TODO: KV heads split (tp_size < num_kv_heads) or replicated (tp_size >= num_kv_heads)
    # TODO: per rank, its query heads, its KV heads and the checkpoint rows they cover
    raise NotImplementedError("qkv_shard_plan")
