# Mistake: promotes the logits to "at least fp32", so fp64 logits give fp64 weights instead of fp32.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    probs = torch.softmax(router_logits.to(torch.promote_types(router_logits.dtype, torch.float32)), dim=-1)
    weights, ids = probs.sort(dim=-1, descending=True, stable=True)
    weights, ids = weights[:, :top_k], ids[:, :top_k]
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids.to(torch.int32)
