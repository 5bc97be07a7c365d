# Mistake: Rejects block_size == 0 only, so a negative block_size is not refused with ValueError.
from __future__ import annotations

import torch


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if block_size == 0:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if expert_map is not None and tuple(expert_map.shape) != (num_experts,):
        raise ValueError(f"expert_map must have num_experts={num_experts} entries, got shape {tuple(expert_map.shape)}")
    device = topk_ids.device
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    buffer = numel + num_experts * (block_size - 1)
    counts = torch.bincount(flat, minlength=num_experts)
    blocks = (counts + block_size - 1) // block_size               # blocks per expert; 0 for an idle one
    run_start = (torch.cumsum(blocks, 0) - blocks) * block_size     # where each expert's run begins
    order = torch.argsort(flat, stable=True)                        # flat indices, expert by expert, ascending
    experts_in_order = flat[order]
    place_in_run = torch.arange(numel, device=device) - (torch.cumsum(counts, 0) - counts)[experts_in_order]
    sorted_ids = torch.full((buffer,), numel, dtype=torch.int32, device=device)
    sorted_ids[run_start[experts_in_order] + place_in_run] = order.to(torch.int32)
    used = torch.repeat_interleave(torch.arange(num_experts, device=device), blocks)
    expert_ids = torch.zeros(-(-buffer // block_size), dtype=torch.int32, device=device)
    expert_ids[:used.numel()] = used.to(torch.int32)
    if expert_map is not None:
        expert_ids = expert_map.to(torch.int32)[expert_ids.long()]
    num_post = (blocks.sum() * block_size).reshape(1).to(torch.int32)
    return sorted_ids, expert_ids, num_post
