# Correct: orders the pairs with one sort of the key expert * numel + flat index, and finds each block's expert with searchsorted over the run ends.
from __future__ import annotations

import torch


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if not block_size >= 1:
        raise ValueError(f"need block_size >= 1 (got {block_size})")
    if expert_map is not None:
        if expert_map.dim() != 1 or expert_map.numel() != num_experts:
            raise ValueError(f"expert_map: expected [{num_experts}], got {list(expert_map.shape)}")
    dev = topk_ids.device
    flat = topk_ids.flatten().to(torch.int64)
    numel = flat.numel()
    total = numel + num_experts * (block_size - 1)
    key = flat * max(numel, 1) + torch.arange(numel, device=dev)
    order = torch.sort(key).indices
    counts = torch.zeros(num_experts, dtype=torch.int64, device=dev).scatter_add_(0, flat, torch.ones_like(flat))
    padded = torch.div(counts + block_size - 1, block_size, rounding_mode="floor") * block_size
    start = torch.cumsum(padded, 0) - padded
    rank = torch.arange(numel, device=dev) - (torch.cumsum(counts, 0) - counts)[flat[order]]
    out = torch.full((total,), numel, dtype=torch.int64, device=dev)
    out[start[flat[order]] + rank] = order
    post = int(padded.sum())
    n_blocks = (total + block_size - 1) // block_size
    block_start = torch.arange(n_blocks, device=dev) * block_size
    owner = torch.searchsorted(torch.cumsum(padded, 0), block_start, right=True)
    owner = torch.where(block_start < post, owner, torch.zeros_like(owner))
    if expert_map is not None:
        owner = expert_map.to(torch.int64)[owner]
    return out.to(torch.int32), owner.to(torch.int32), torch.tensor([post], dtype=torch.int32, device=dev)
