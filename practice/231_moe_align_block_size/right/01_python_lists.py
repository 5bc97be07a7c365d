# Correct: plain Python lists, one expert at a time, turned into int32 tensors at the end; checks the expert_map before block_size, with its own messages.
from __future__ import annotations

import torch


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if expert_map is not None and list(expert_map.shape) != [num_experts]:
        raise ValueError("expert_map has the wrong shape")
    if block_size <= 0:
        raise ValueError("block_size must be positive")
    flat = topk_ids.flatten().tolist()
    numel = len(flat)
    size = numel + num_experts * (block_size - 1)
    sorted_ids, blocks = [], []
    for e in range(num_experts):
        mine = [i for i, x in enumerate(flat) if x == e]
        if not mine:
            continue
        while len(mine) % block_size:
            mine.append(numel)
        sorted_ids += mine
        blocks += [e] * (len(mine) // block_size)
    post = len(sorted_ids)
    sorted_ids += [numel] * (size - post)
    blocks += [0] * ((size + block_size - 1) // block_size - len(blocks))
    if expert_map is not None:
        table = expert_map.tolist()
        blocks = [table[b] for b in blocks]
    device = topk_ids.device
    return (torch.tensor(sorted_ids, dtype=torch.int32, device=device),
            torch.tensor(blocks, dtype=torch.int32, device=device),
            torch.tensor([post], dtype=torch.int32, device=device))
