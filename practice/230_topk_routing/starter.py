"""Exercise 230: the MoE routing kernel (softmax, top-k, renormalisation, the tie rule). Keep the name and signature."""
from __future__ import annotations

import torch


def moe_topk_softmax(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 softmax per row, the top_k largest (descending, ties: lower expert id first), optional renormalisation.

    Ties mean equal fp32 probabilities. Returns (weights fp32 [T, top_k], ids int32 [T, top_k]) whatever the
    input dtype; ValueError for a non-2-D input or a bad top_k, also when T = 0.
    """
    # TODO: validate router_logits (2-D) and top_k (an int, not a bool, in [1, E])
    # TODO: softmax in fp32
    # TODO: the top_k largest per row, descending, ties to the lower expert id
    # TODO: renormalise if asked; weights fp32, ids int32
    raise NotImplementedError("moe_topk_softmax")
