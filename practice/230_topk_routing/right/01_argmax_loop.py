# Correct: picks the experts one at a time with argmax (which returns the first, i.e. lowest, index of a maximum) and masks each pick; checks top_k before the shape, with its own messages.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if type(top_k) is not int:
        raise ValueError("top_k has to be a plain int")
    if router_logits.ndim != 2:
        raise ValueError("expected a 2-D logits tensor")
    if top_k < 1 or top_k > router_logits.size(1):
        raise ValueError("top_k out of range")
    probs = torch.softmax(router_logits, dim=1, dtype=torch.float32)
    work = probs.clone()
    ids = torch.empty(probs.size(0), top_k, dtype=torch.int64)
    for k in range(top_k):
        best = work.argmax(dim=1)
        ids[:, k] = best
        work.scatter_(1, best.unsqueeze(1), float("-inf"))
    weights = probs.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=1, keepdim=True)
    return weights, ids.int()
