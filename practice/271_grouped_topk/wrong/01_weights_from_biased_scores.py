# Mistake: takes the weights from the biased choice values instead of the unbiased scores.
"""Exercise 271: grouped top-k routing (DeepSeek-V2/V3) with a correction bias."""
from __future__ import annotations

import torch


def _positive_int(value, name: str, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1 or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer in [1, {high if high is not None else 'inf'}], got {value!r}")
    return value


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    if router_logits.dim() != 2:
        raise ValueError(f"router_logits must be [tokens, experts], got shape {tuple(router_logits.shape)}")
    num_experts = router_logits.shape[1]
    _positive_int(top_k, "top_k", num_experts)
    _positive_int(num_expert_group, "num_expert_group")
    _positive_int(topk_group, "topk_group", num_expert_group)
    if num_experts % num_expert_group:
        raise ValueError(f"num_expert_group={num_expert_group} must divide the number of experts {num_experts}")
    group_size = num_experts // num_expert_group
    if top_k > topk_group * group_size:
        raise ValueError(f"top_k={top_k} exceeds the {topk_group} chosen groups of {group_size} experts")
    if scoring_func not in ("softmax", "sigmoid"):
        raise ValueError(f"scoring_func must be 'softmax' or 'sigmoid', got {scoring_func!r}")
    if e_score_correction_bias is not None and tuple(e_score_correction_bias.shape) != (num_experts,):
        raise ValueError(f"e_score_correction_bias must be [{num_experts}], got {tuple(e_score_correction_bias.shape)}")

    logits = router_logits.float()
    scores = torch.sigmoid(logits) if scoring_func == "sigmoid" else torch.softmax(logits, dim=-1)
    choice = scores if e_score_correction_bias is None else scores + e_score_correction_bias.float()
    grouped = choice.view(choice.shape[0], num_expert_group, group_size)                # consecutive ids per group
    if e_score_correction_bias is None:
        group_scores = grouped.max(dim=-1).values                             # V2: the group's best
    else:
        group_scores = grouped.sort(dim=-1, descending=True).values[..., :2].sum(dim=-1)   # V3: its best two
    # A stable descending sort keeps equal values in id order: the lower id wins a tie.
    kept_groups = group_scores.sort(dim=-1, descending=True, stable=True).indices[:, :topk_group]
    kept = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, kept_groups, True)
    masked = choice.masked_fill(~kept.repeat_interleave(group_size, dim=1), float("-inf"))
    ids = masked.sort(dim=-1, descending=True, stable=True).indices[:, :top_k]
    weights = choice.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights * routed_scaling_factor, ids.to(torch.int32)
