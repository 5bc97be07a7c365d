# Correct: counts blocks per expert first (divmod) and derives the rows from them; the mean via statistics.fmean.
from __future__ import annotations

from statistics import fmean


def expert_load(topk_ids: list[list[int]], num_experts: int, block_size: int) -> dict:
    if block_size <= 0:
        raise ValueError("block_size must be a positive number of rows")
    counts = [0] * num_experts
    pairs = 0
    for row in topk_ids:
        for e in row:
            if e < 0 or e > num_experts - 1:
                raise ValueError("expert id out of range")
            counts[e] += 1
            pairs += 1
    if pairs == 0:
        raise ValueError("T*K is 0")
    blocks = 0
    for c in counts:
        full, rest = divmod(c, block_size)
        blocks += full + (1 if rest else 0)
    padded = blocks * block_size
    return {"tokens_per_expert": counts, "padded_rows": padded, "num_m_blocks": blocks,
            "padding_overhead": (padded - pairs) / pairs,
            "max_buffer_rows": pairs + num_experts * (block_size - 1),
            "imbalance": max(counts) / fmean(counts)}
