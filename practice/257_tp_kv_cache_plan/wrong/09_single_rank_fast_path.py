# Mistake: Answers a single rank straight away (all its KV heads, no replication) before checking the arguments.
from __future__ import annotations


def kv_cache_plan(num_layers: int, num_kv_heads: int, head_dim: int, tp_size: int, block_size: int,
                  budget_bytes: int, dtype_bytes: int = 2) -> dict:
    if tp_size == 1:                     # one rank keeps every KV head
        block_bytes = 2 * num_layers * block_size * num_kv_heads * head_dim * dtype_bytes
        if budget_bytes < block_bytes:
            raise ValueError(f"a budget of {budget_bytes} bytes cannot hold one block of {block_bytes} bytes")
        num_blocks = budget_bytes // block_bytes
        return {"kv_heads_per_rank": num_kv_heads, "block_bytes": block_bytes, "num_blocks": num_blocks,
                "tokens": num_blocks * block_size, "replication": 1.0}
    args = (num_layers, num_kv_heads, head_dim, tp_size, block_size, budget_bytes, dtype_bytes)
    if min(args) < 1:
        raise ValueError(f"every argument must be >= 1, got {args}")
    if tp_size < num_kv_heads:
        if num_kv_heads % tp_size:
            raise ValueError(f"num_kv_heads={num_kv_heads} is not divisible by tp_size={tp_size}")
        heads = num_kv_heads // tp_size
    else:
        if tp_size % num_kv_heads:
            raise ValueError(f"tp_size={tp_size} is not a multiple of num_kv_heads={num_kv_heads}")
        heads = 1
    block_bytes = 2 * num_layers * block_size * heads * head_dim * dtype_bytes
    if budget_bytes < block_bytes:
        raise ValueError(f"a budget of {budget_bytes} bytes cannot hold one block of {block_bytes} bytes")
    num_blocks = budget_bytes // block_bytes
    return {"kv_heads_per_rank": heads, "block_bytes": block_bytes, "num_blocks": num_blocks,
            "tokens": num_blocks * block_size, "replication": tp_size * heads / num_kv_heads}
