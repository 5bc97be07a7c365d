# Mistake: Flattens topk_ids column by column (choice-major), so pair t * K + k is not the one it numbers.
from __future__ import annotations

import torch


def dispatch_plan(topk_ids: torch.Tensor, expert_owner: torch.Tensor,
                  world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    owner = expert_owner.long()
    if owner.numel() and not (0 <= int(owner.min()) and int(owner.max()) < world_size):
        raise ValueError(f"expert_owner names ranks outside [0, {world_size}): {owner.tolist()}")
    flat = topk_ids.t().reshape(-1).long()
    if flat.numel() and not (0 <= int(flat.min()) and int(flat.max()) < owner.numel()):
        raise ValueError(f"expert ids must be in [0, {owner.numel()}), got {flat.tolist()}")
    dest = owner[flat]
    return torch.argsort(dest, stable=True), torch.bincount(dest, minlength=world_size)
