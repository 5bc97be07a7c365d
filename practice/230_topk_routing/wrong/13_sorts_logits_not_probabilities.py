# Mistake: sorts the logits instead of the fp32 probabilities; distinct logits whose probabilities are equal are not ranked lower id first.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    ids = router_logits.float().sort(dim=-1, descending=True, stable=True).indices[:, :top_k]
    weights = torch.softmax(router_logits.float(), dim=-1).gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
