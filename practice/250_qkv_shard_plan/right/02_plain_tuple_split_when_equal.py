# Correct: returns a plain 5-tuple, and takes the split branch when tp_size equals total_kv_heads (the same numbers).
from __future__ import annotations


def head_shard(total_heads, total_kv_heads, tp_size, tp_rank):
    problems = []
    if tp_size < 1:
        problems.append(f"tp_size={tp_size} < 1")
    elif not 0 <= tp_rank < tp_size:
        problems.append(f"tp_rank={tp_rank} not in [0, {tp_size})")
    if total_heads < 1 or total_kv_heads < 1:
        problems.append("head counts below 1")
    elif total_heads % total_kv_heads:
        problems.append("total_heads not a multiple of total_kv_heads")
    if tp_size >= 1 and total_heads % tp_size:
        problems.append("total_heads not divisible by tp_size")
    if tp_size >= 1 and total_kv_heads >= 1:
        if tp_size <= total_kv_heads and total_kv_heads % tp_size:
            problems.append("total_kv_heads not divisible by tp_size")
        if tp_size > total_kv_heads and tp_size % total_kv_heads:
            problems.append("tp_size not a multiple of total_kv_heads")
    if problems:
        raise ValueError("; ".join(problems))
    num_heads = total_heads // tp_size
    if tp_size > total_kv_heads:
        replicas = tp_size // total_kv_heads
        return (num_heads, 1, tp_rank * num_heads, tp_rank // replicas, replicas)
    num_kv = total_kv_heads // tp_size
    return (num_heads, num_kv, tp_rank * num_heads, tp_rank * num_kv, 1)
