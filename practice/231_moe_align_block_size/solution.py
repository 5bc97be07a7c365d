"""Exercise 231: vLLM's moe_align_block_size in plain Python (solution)."""
from __future__ import annotations


def moe_align_block_size(topk_ids: list[list[int]], block_size: int, num_experts: int,
                         expert_map: list[int] | None = None) -> tuple[list[int], list[int], int]:
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if expert_map is not None and len(expert_map) != num_experts:
        raise ValueError(f"expert_map has {len(expert_map)} entries, expected num_experts={num_experts}")
    flat = [e for row in topk_ids for e in row]
    numel = len(flat)
    runs: list[list[int]] = [[] for _ in range(num_experts)]
    for i, e in enumerate(flat):
        if not 0 <= e < num_experts:
            raise ValueError(f"expert id {e} at flat index {i} is outside [0, {num_experts})")
        runs[e].append(i)
    sorted_ids: list[int] = []
    expert_ids: list[int] = []
    for e, run in enumerate(runs):
        blocks = -(-len(run) // block_size)
        sorted_ids += run + [numel] * (blocks * block_size - len(run))
        expert_ids += [e] * blocks
    post_padded = len(sorted_ids)
    buffer = numel + num_experts * (block_size - 1)
    sorted_ids += [numel] * (buffer - post_padded)
    expert_ids += [0] * (-(-buffer // block_size) - len(expert_ids))
    if expert_map is not None:
        expert_ids = [expert_map[e] for e in expert_ids]
    return sorted_ids, expert_ids, post_padded
