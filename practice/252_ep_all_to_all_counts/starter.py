"""Exercise 252: the send order and send counts of an expert-parallel all-to-all. Keep the names."""
from __future__ import annotations

import torch


def dispatch_plan(topk_ids: torch.Tensor, expert_owner: torch.Tensor,
                  world_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(order int64 [t*K], send_counts int64 [world_size]) of this rank; see problem.md."""
    # TODO: check the owners and the expert ids
    # TODO: the destination rank of every pair (row-major), a stable sort by it, and the count per rank
    raise NotImplementedError("dispatch_plan")
