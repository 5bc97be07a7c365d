# Correct: checks each argument by name in a loop, then the budget, with heads = max(1, kv // tp) and replication = max(1.0, tp / kv).
from __future__ import annotations


def kv_cache_plan(num_layers, num_kv_heads, head_dim, tp_size, block_size, budget_bytes, dtype_bytes=2):
    named = {"num_layers": num_layers, "num_kv_heads": num_kv_heads, "head_dim": head_dim, "tp_size": tp_size,
             "block_size": block_size, "budget_bytes": budget_bytes, "dtype_bytes": dtype_bytes}
    for name, value in named.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if (tp_size < num_kv_heads and num_kv_heads % tp_size) or (tp_size >= num_kv_heads and tp_size % num_kv_heads):
        raise ValueError(f"{num_kv_heads} KV heads cannot be split or replicated over {tp_size} ranks")
    heads = max(1, num_kv_heads // tp_size)
    per_block = 2 * num_layers * block_size * heads * head_dim * dtype_bytes
    blocks = budget_bytes // per_block
    if blocks == 0:
        raise ValueError(f"{budget_bytes} bytes hold no block of {per_block} bytes")
    return dict(kv_heads_per_rank=heads, block_bytes=per_block, num_blocks=blocks, tokens=blocks * block_size,
                replication=max(1.0, tp_size / num_kv_heads))
