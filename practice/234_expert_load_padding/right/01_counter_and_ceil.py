# Correct: checks the ids before block_size, counts with collections.Counter, rounds up with math.ceil, and builds the dict in another key order.
from __future__ import annotations

import math
from collections import Counter


def expert_load(topk_ids: list[list[int]], num_experts: int, block_size: int) -> dict:
    flat = [e for row in topk_ids for e in row]
    bad = [e for e in flat if e < 0 or e >= num_experts]
    if bad:
        raise ValueError(f"ids {bad} are not experts 0..{num_experts - 1}")
    if not flat:
        raise ValueError("no routed pairs")
    if not block_size >= 1:
        raise ValueError("block_size < 1")
    seen = Counter(flat)
    counts = [seen[e] for e in range(num_experts)]
    padded = sum(math.ceil(c / block_size) * block_size for c in counts)
    n = len(flat)
    return {"imbalance": max(counts) * num_experts / n,
            "max_buffer_rows": n + num_experts * (block_size - 1),
            "padding_overhead": padded / n - 1,
            "num_m_blocks": padded // block_size,
            "padded_rows": padded,
            "tokens_per_expert": counts}
