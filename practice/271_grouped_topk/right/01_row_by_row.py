# Correct: routes row by row with Python's sorted() and the key (-value, id), on fp32 values; builds the tensors at the end; checks in another order with other messages.
from __future__ import annotations

import torch


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    if scoring_func not in ("sigmoid", "softmax"):
        raise ValueError(f"unknown scoring_func {scoring_func!r}")
    if router_logits.dim() != 2:
        raise ValueError("router_logits must be 2-D")
    tokens, experts = router_logits.shape
    if not (_is_int(num_expert_group) and num_expert_group > 0 and _is_int(topk_group) and topk_group > 0):
        raise ValueError("num_expert_group and topk_group must be positive integers")
    if experts % num_expert_group or topk_group > num_expert_group:
        raise ValueError("bad grouping")
    size = experts // num_expert_group
    if not _is_int(top_k) or not 1 <= top_k <= min(experts, topk_group * size):
        raise ValueError(f"bad top_k {top_k!r}")
    if e_score_correction_bias is not None and list(e_score_correction_bias.shape) != [experts]:
        raise ValueError("bias must have one entry per expert")

    logits = router_logits.to(torch.float32)
    scores = logits.sigmoid() if scoring_func == "sigmoid" else logits.softmax(dim=1)
    choice = scores.clone() if e_score_correction_bias is None else scores + e_score_correction_bias.to(torch.float32)
    all_ids, all_weights = [], []
    for t in range(tokens):
        row = choice[t]
        group_scores = []
        for g in range(num_expert_group):
            best = row[g * size:(g + 1) * size].sort(descending=True).values
            group_scores.append(float(best[0]) if e_score_correction_bias is None else float(best[:2].sum()))
        kept = sorted(range(num_expert_group), key=lambda g: (-group_scores[g], g))[:topk_group]
        values = row.tolist()
        candidates = [e for g in kept for e in range(g * size, (g + 1) * size)]
        ids = sorted(candidates, key=lambda e: (-values[e], e))[:top_k]
        all_ids.append(ids)
        all_weights.append(scores[t, ids])
    if not tokens:
        return torch.zeros(0, top_k), torch.zeros(0, top_k, dtype=torch.int32)
    weights = torch.stack(all_weights)
    if renormalize:
        weights = weights / weights.sum(dim=1, keepdim=True)
    return (weights * routed_scaling_factor).float(), torch.tensor(all_ids, dtype=torch.int32)
