# Correct: a stable ascending argsort of the negated probabilities, renormalising with torch.nn.functional.normalize(p=1).
from __future__ import annotations

import torch
import torch.nn.functional as F


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be 2-D, not {router_logits.dim()}-D")
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise ValueError(f"top_k must be an int, got {type(top_k).__name__}")
    if not 1 <= top_k <= router_logits.shape[-1]:
        raise ValueError(f"top_k={top_k} must lie in [1, {router_logits.shape[-1]}]")
    probs = router_logits.float().softmax(dim=-1)
    ids = torch.argsort(-probs, dim=-1, stable=True)[:, :top_k]
    weights = torch.take_along_dim(probs, ids, dim=-1)
    if renormalize:
        weights = F.normalize(weights, p=1, dim=-1)
    return weights, ids.to(torch.int32)
