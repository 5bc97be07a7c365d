# Correct: checks with torch.all and raises from a helper, counts with a one-hot sum, stable sort through torch.sort.
from __future__ import annotations

import torch
import torch.nn.functional as F


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def dispatch_plan(topk_ids, expert_owner, world_size):
    owner = expert_owner.long()
    _require(bool(torch.all((owner >= 0) & (owner < world_size))), f"owners {owner.tolist()} vs {world_size} ranks")
    flat = topk_ids.long().flatten()
    _require(bool(torch.all((flat >= 0) & (flat < len(owner)))), f"expert ids {flat.tolist()} vs {len(owner)}")
    dest = owner[flat]
    order = torch.sort(dest, stable=True).indices
    counts = F.one_hot(dest, num_classes=world_size).sum(0) if dest.numel() else torch.zeros(world_size)
    return order, counts.long()
