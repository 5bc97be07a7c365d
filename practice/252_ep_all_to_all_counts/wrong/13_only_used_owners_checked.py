# Mistake: Checks only the owners of the chosen experts (the destinations), so an unused expert's bad owner is not reported.
from __future__ import annotations

import torch


def dispatch_plan(topk_ids: torch.Tensor, expert_owner: torch.Tensor,
                  world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    owner = expert_owner.long()
    flat = topk_ids.reshape(-1).long()
    if flat.numel() and not (0 <= int(flat.min()) and int(flat.max()) < owner.numel()):
        raise ValueError(f"expert ids must be in [0, {owner.numel()}), got {flat.tolist()}")
    dest = owner[flat]
    if dest.numel() and not (0 <= int(dest.min()) and int(dest.max()) < world_size):
        raise ValueError(f"destination ranks outside [0, {world_size}): {dest.tolist()}")
    return torch.argsort(dest, stable=True), torch.bincount(dest, minlength=world_size)
