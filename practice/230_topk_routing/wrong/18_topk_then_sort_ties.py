# Mistake: picks the set with torch.topk and only then orders it by (probability, id), so a tie at the top_k boundary can keep a higher id.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    probs = torch.softmax(router_logits.float(), dim=-1)
    _, picked = torch.topk(probs, top_k, dim=-1)
    picked = picked.sort(dim=-1).values
    order = probs.gather(1, picked).sort(dim=-1, descending=True, stable=True).indices
    ids = picked.gather(1, order)
    weights = probs.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
