# Correct: a plain-Python softmax in fp32 (exp(x - max) / sum) and sorted() with the key (-p, id) per row; tensors are built at the end.
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if len(router_logits.shape) != 2:
        raise ValueError("router_logits: need [T, E]")
    tokens, experts = router_logits.shape
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not (0 < top_k <= experts):
        raise ValueError(f"bad top_k {top_k} for {experts} experts")
    x = router_logits.to(torch.float32)
    shifted = torch.exp(x - x.max(dim=-1, keepdim=True).values) if tokens else x
    probs = shifted / shifted.sum(dim=-1, keepdim=True)
    all_ids, all_weights = [], []
    for row in probs.tolist():
        chosen = sorted(range(experts), key=lambda e: (-row[e], e))[:top_k]
        all_ids.append(chosen)
        all_weights.append([row[e] for e in chosen])
    weights = torch.tensor(all_weights, dtype=torch.float32).reshape(tokens, top_k)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, torch.tensor(all_ids, dtype=torch.int32).reshape(tokens, top_k)
