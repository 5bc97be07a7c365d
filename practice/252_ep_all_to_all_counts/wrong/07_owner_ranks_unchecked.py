# Mistake: Does not check expert_owner, so an owner outside [0, world_size) just gets counted past the end.
from __future__ import annotations

import torch


def dispatch_plan(topk_ids: torch.Tensor, expert_owner: torch.Tensor,
                  world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    owner = expert_owner.long()
    flat = topk_ids.reshape(-1).long()
    if flat.numel() and not (0 <= int(flat.min()) and int(flat.max()) < owner.numel()):
        raise ValueError(f"expert ids must be in [0, {owner.numel()}), got {flat.tolist()}")
    dest = owner[flat]                                             # the destination rank of every pair
    return torch.argsort(dest, stable=True), torch.bincount(dest, minlength=world_size)
