# Mistake: ranks the experts by a softmax in the input dtype (bf16), where distinct fp32 probabilities can round to a tie; only the weights are fp32.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    ranked = torch.softmax(router_logits, dim=-1).sort(dim=-1, descending=True, stable=True).indices[:, :top_k]
    weights = torch.softmax(router_logits.float(), dim=-1).gather(1, ranked)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ranked.to(torch.int32)
