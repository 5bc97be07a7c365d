# Mistake: Returns empty results straight away when there are no tokens, so a bad expert_owner is not reported then.
from __future__ import annotations

import torch


def dispatch_plan(topk_ids: torch.Tensor, expert_owner: torch.Tensor,
                  world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    if topk_ids.numel() == 0:                                      # nothing to send
        return torch.zeros(0, dtype=torch.int64), torch.zeros(world_size, dtype=torch.int64)
    owner = expert_owner.long()
    if owner.numel() and not (0 <= int(owner.min()) and int(owner.max()) < world_size):
        raise ValueError(f"expert_owner names ranks outside [0, {world_size}): {owner.tolist()}")
    flat = topk_ids.reshape(-1).long()
    if flat.numel() and not (0 <= int(flat.min()) and int(flat.max()) < owner.numel()):
        raise ValueError(f"expert ids must be in [0, {owner.numel()}), got {flat.tolist()}")
    dest = expert_owner.long()[flat]
    return torch.argsort(dest, stable=True), torch.bincount(dest, minlength=world_size)
