# Mistake: Counts each expert once per token (set(row)), so a token that lists an expert twice counts once instead of once per (token, choice).
from __future__ import annotations


def expert_load(topk_ids: list[list[int]], num_experts: int, block_size: int) -> dict:
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    counts = [0] * num_experts
    for row in topk_ids:
        for e in set(row):
            if not 0 <= e < num_experts:
                raise ValueError(f"expert id {e} is outside [0, {num_experts})")
            counts[e] += 1
    real = sum(counts)
    if real == 0:
        raise ValueError("topk_ids holds no (token, choice) pair")
    padded = sum(-(-c // block_size) * block_size for c in counts)
    return {"tokens_per_expert": counts, "padded_rows": padded, "num_m_blocks": padded // block_size,
            "padding_overhead": (padded - real) / real,
            "max_buffer_rows": real + num_experts * (block_size - 1),
            "imbalance": max(counts) / (real / num_experts)}
