# Mistake: returns the empty result for T = 0 before checking top_k, so a top_k larger than E passes when there are no tokens.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    if router_logits.shape[0] == 0:
        return torch.zeros(0, top_k), torch.zeros(0, top_k, dtype=torch.int32)
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    probs = torch.softmax(router_logits.float(), dim=-1)
    weights, ids = probs.sort(dim=-1, descending=True, stable=True)
    weights, ids = weights[:, :top_k], ids[:, :top_k]
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
