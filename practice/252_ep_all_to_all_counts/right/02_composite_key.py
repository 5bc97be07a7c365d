# Correct: sorts a unique key dest * P + p (stability not needed), counts with a comparison per rank.
from __future__ import annotations

import torch


def dispatch_plan(topk_ids, expert_owner, world_size):
    flat = topk_ids.reshape(-1).to(torch.int64)
    owner = expert_owner.to(torch.int64)
    if ((owner < 0) | (owner >= world_size)).any():
        raise ValueError("expert_owner has a rank outside the group")
    if ((flat < 0) | (flat >= owner.numel())).any():
        raise ValueError("topk_ids has an expert id that does not exist")
    dest = owner[flat]
    num_pairs = flat.numel()
    key = dest * max(num_pairs, 1) + torch.arange(num_pairs)
    order = torch.sort(key).indices
    counts = torch.stack([(dest == j).sum() for j in range(world_size)]) if world_size else torch.zeros(0)
    return order, counts.to(torch.int64)
