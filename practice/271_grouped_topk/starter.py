"""Exercise 271: grouped top-k routing (DeepSeek-V2/V3) with a correction bias. Keep the name and signature."""
from __future__ import annotations

import torch


def moe_grouped_topk(router_logits: torch.Tensor, top_k: int, num_expert_group: int, topk_group: int,
                     renormalize: bool, scoring_func: str = "softmax",
                     e_score_correction_bias: torch.Tensor | None = None,
                     routed_scaling_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Groups of consecutive experts; the best topk_group groups, then the best top_k experts inside them.

    Returns (weights fp32 [T, top_k], ids int32 [T, top_k]); see problem.md for every rule.
    """
    # TODO: validate (2-D logits, top_k, num_expert_group, topk_group, divisibility, scoring_func, bias shape)
    # TODO: scores in fp32 (sigmoid or softmax); choice = scores (+ bias)
    # TODO: group scores: sum of the best two with a bias, the best one without; keep topk_group groups
    # TODO: the top_k experts by choice inside the kept groups, descending, ties to the lower id
    # TODO: weights = unbiased scores of those experts; renormalise if asked; times routed_scaling_factor
    raise NotImplementedError("moe_grouped_topk")
