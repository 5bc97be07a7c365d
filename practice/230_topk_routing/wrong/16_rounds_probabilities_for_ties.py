# Mistake: rounds the probabilities to 6 decimals before sorting "to make ties robust", so nearly equal but distinct ones count as ties.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    probs = torch.softmax(router_logits.float(), dim=-1)
    ids = probs.round(decimals=6).sort(dim=-1, descending=True, stable=True).indices[:, :top_k]
    weights = probs.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
