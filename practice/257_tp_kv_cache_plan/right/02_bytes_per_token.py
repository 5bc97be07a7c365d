# Correct: computes the bytes of one token first, then the block; the split/replicate branches in the other order.
from __future__ import annotations


def kv_cache_plan(num_layers: int, num_kv_heads: int, head_dim: int, tp_size: int, block_size: int,
                  budget_bytes: int, dtype_bytes: int = 2) -> dict:
    if any(v <= 0 for v in (num_layers, num_kv_heads, head_dim, tp_size, block_size, budget_bytes, dtype_bytes)):
        raise ValueError("all arguments must be positive")
    if tp_size >= num_kv_heads:
        if tp_size % num_kv_heads != 0:
            raise ValueError("tp_size is not a multiple of num_kv_heads")
        per_rank = 1
    elif num_kv_heads % tp_size != 0:
        raise ValueError("num_kv_heads is not divisible by tp_size")
    else:
        per_rank = num_kv_heads // tp_size
    token_bytes = 2 * num_layers * per_rank * head_dim * dtype_bytes       # K and V of every layer
    block_bytes = token_bytes * block_size
    if block_bytes > budget_bytes:
        raise ValueError("the budget is smaller than one block")
    num_blocks = budget_bytes // block_bytes
    return {"kv_heads_per_rank": per_rank, "block_bytes": block_bytes, "num_blocks": num_blocks,
            "tokens": num_blocks * block_size, "replication": tp_size * per_rank / num_kv_heads}
