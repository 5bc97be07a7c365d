# Mistake: takes the softmax over the top_k chosen logits only, which equals renormalising, so renormalize=False is ignored.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
        raise ValueError(f"top_k must be an integer in [1, {num_experts}], got {top_k!r}")
    logits = router_logits.float()
    chosen, ids = logits.sort(dim=-1, descending=True, stable=True)
    weights = torch.softmax(chosen[:, :top_k], dim=-1)
    return weights, ids[:, :top_k].to(torch.int32)
