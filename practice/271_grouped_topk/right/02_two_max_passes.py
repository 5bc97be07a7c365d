# Correct: finds a group's best two with two max passes (the best, then the best of the rest), ranks with a stable argsort of the negated values, and masks dropped groups with a where().
from __future__ import annotations

import torch


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    def positive(x):
        return type(x) is int and x >= 1

    if router_logits.ndim != 2:
        raise ValueError("router_logits: expected [T, E]")
    t, e = router_logits.shape
    if not (positive(top_k) and top_k <= e):
        raise ValueError("top_k out of range")
    if not positive(num_expert_group) or not positive(topk_group):
        raise ValueError("group counts must be positive ints")
    if e % num_expert_group != 0:
        raise ValueError("experts do not split evenly into groups")
    if topk_group > num_expert_group or top_k > topk_group * (e // num_expert_group):
        raise ValueError("not enough groups / experts to choose from")
    if scoring_func == "sigmoid":
        scores = torch.sigmoid(router_logits.float())
    elif scoring_func == "softmax":
        scores = torch.softmax(router_logits.float(), dim=-1)
    else:
        raise ValueError(scoring_func)
    biased = e_score_correction_bias is not None
    if biased and e_score_correction_bias.shape != torch.Size([e]):
        raise ValueError("bias shape")
    choice = scores + e_score_correction_bias.float() if biased else scores
    g = choice.reshape(t, num_expert_group, e // num_expert_group)
    best, where = g.max(dim=-1)
    if biased and g.shape[-1] > 1:
        rest = g.scatter(-1, where.unsqueeze(-1), float("-inf"))
        best = best + rest.max(dim=-1).values
    order = torch.argsort(-best, dim=-1, stable=True)[:, :topk_group]
    keep = torch.zeros(t, num_expert_group, dtype=torch.bool)
    keep[torch.arange(t).unsqueeze(1), order] = True
    keep = keep.unsqueeze(-1).expand_as(g).reshape(t, e)
    ranked = torch.where(keep, choice, torch.full_like(choice, float("-inf")))
    ids = torch.argsort(-ranked, dim=-1, stable=True)[:, :top_k]
    w = torch.take_along_dim(scores, ids, dim=1)
    if renormalize:
        w = w / w.sum(-1, keepdim=True)
    return w * routed_scaling_factor, ids.int()
