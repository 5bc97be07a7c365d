# Correct: plain Python buckets per destination rank, the ids checked before the owners, tensors built at the end.
from __future__ import annotations

import torch


def dispatch_plan(topk_ids, expert_owner, world_size):
    owners = [int(o) for o in expert_owner.tolist()]
    pairs = [int(e) for e in topk_ids.flatten().tolist()]
    for e in pairs:
        if e < 0 or e >= len(owners):
            raise ValueError(f"expert id {e} does not exist (there are {len(owners)} experts)")
    for e, o in enumerate(owners):
        if o < 0 or o >= world_size:
            raise ValueError(f"expert {e} is on rank {o}, but ranks are 0..{world_size - 1}")
    buckets = [[] for _ in range(world_size)]
    for p, e in enumerate(pairs):
        buckets[owners[e]].append(p)
    order = [p for bucket in buckets for p in bucket]
    return (torch.tensor(order, dtype=torch.int64),
            torch.tensor([len(b) for b in buckets], dtype=torch.int64))
