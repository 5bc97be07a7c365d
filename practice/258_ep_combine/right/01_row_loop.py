# Correct: a loop over the returned rows, each added to its token with its weight, in an fp32 accumulator.
from __future__ import annotations

import torch


def ep_combine(expert_out, order, topk_weights):
    tokens, k = topk_weights.shape
    if order.dim() != 1 or order.numel() != tokens * k:
        raise ValueError(f"order must be a vector of {tokens * k} pair indices")
    if expert_out.dim() != 2:
        raise ValueError("expert_out must be [rows, hidden]")
    if expert_out.shape[0] != order.numel():
        raise ValueError("expert_out needs one row per pair")
    acc = torch.zeros(tokens, expert_out.shape[1], dtype=torch.float32)
    for i, pair in enumerate(order.tolist()):
        t, c = divmod(pair, k)
        acc[t] += topk_weights[t, c].float() * expert_out[i].float()
    return acc.to(expert_out.dtype)
