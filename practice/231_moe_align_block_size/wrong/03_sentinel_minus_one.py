# Mistake: Pads with -1 instead of the sentinel numel that vLLM's kernel masks against.
from __future__ import annotations


def moe_align_block_size(topk_ids, block_size, num_experts, expert_map=None):
    if block_size < 1:
        raise ValueError("block_size must be >= 1")
    if expert_map is not None and len(expert_map) != num_experts:
        raise ValueError("expert_map must have num_experts entries")
    flat = [e for row in topk_ids for e in row]
    numel = len(flat)
    runs = [[] for _ in range(num_experts)]
    for i, e in enumerate(flat):
        if not 0 <= e < num_experts:
            raise ValueError(f"expert id {e} out of range")
        runs[e].append(i)
    sorted_ids, expert_ids = [], []
    for e, run in enumerate(runs):
        blocks = -(-len(run) // block_size)
        sorted_ids += run + [-1] * (blocks * block_size - len(run))
        expert_ids += [e] * blocks
    post_padded = len(sorted_ids)
    buffer = numel + num_experts * (block_size - 1)
    sorted_ids += [numel] * (buffer - post_padded)
    expert_ids += [0] * (-(-buffer // block_size) - len(expert_ids))
    if expert_map is not None:
        expert_ids = [expert_map[e] for e in expert_ids]
    return sorted_ids, expert_ids, post_padded
