# Mistake: Reports kv_replicas as 1 even when each KV head is stored on several ranks.
from __future__ import annotations


def qkv_shard_plan(num_heads: int, num_kv_heads: int, head_dim: int, tp_size: int) -> list[dict]:
    if min(num_heads, num_kv_heads, head_dim, tp_size) < 1:
        raise ValueError(f"every argument must be >= 1, got {num_heads}, {num_kv_heads}, {head_dim}, {tp_size}")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} is not a multiple of num_kv_heads={num_kv_heads}")
    if num_heads % tp_size:
        raise ValueError(f"num_heads={num_heads} is not divisible by tp_size={tp_size}")
    if tp_size >= num_kv_heads:
        if tp_size % num_kv_heads:
            raise ValueError(f"tp_size={tp_size} is not a multiple of num_kv_heads={num_kv_heads}: cannot replicate evenly")
        kv_per_rank, replicas = 1, tp_size // num_kv_heads
    else:
        if num_kv_heads % tp_size:
            raise ValueError(f"num_kv_heads={num_kv_heads} is not divisible by tp_size={tp_size}")
        kv_per_rank, replicas = num_kv_heads // tp_size, 1
    q_per_rank = num_heads // tp_size
    plan = []
    for rank in range(tp_size):
        q_start = rank * q_per_rank
        kv_start = (rank // replicas) * kv_per_rank
        plan.append({"q_heads": list(range(q_start, q_start + q_per_rank)),
                     "kv_heads": list(range(kv_start, kv_start + kv_per_rank)),
                     "kv_replicas": 1,
                     "q_rows": [q_start * head_dim, (q_start + q_per_rank) * head_dim],
                     "kv_rows": [kv_start * head_dim, (kv_start + kv_per_rank) * head_dim]})
    return plan
