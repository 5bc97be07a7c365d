"""Exercise 235: fused_experts as a loop over experts (the CPU specification). Keep the names."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def fused_experts(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, topk_weights: torch.Tensor,
                  topk_ids: torch.Tensor, expert_map: torch.Tensor | None = None) -> torch.Tensor:
    """out[t] = sum_j topk_weights[t, j] * expert_{topk_ids[t, j]}(hidden[t]); see problem.md."""
    # TODO: validate shapes and expert ids; translate global ids through expert_map (-1 = elsewhere)
    # TODO: for each local expert: its (token, choice) pairs, gate/up halves, silu(gate) * up, w2, weight, index_add_
    raise NotImplementedError("fused_experts")
