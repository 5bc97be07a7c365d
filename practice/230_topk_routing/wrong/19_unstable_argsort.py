# Mistake: Ranks with a plain descending argsort, which promises no order among equal probabilities.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 softmax per row, the top_k largest (descending, ties: lower expert id first), optional renormalisation."""
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    probs = torch.softmax(router_logits.float(), dim=-1)
    # A stable descending sort keeps equal probabilities in expert order: the lower id wins a tie.
    ids = probs.argsort(dim=-1, descending=True)
    weights = probs.gather(1, ids)
    weights, ids = weights[:, :top_k], ids[:, :top_k]
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
