"""Exercise 233: an expert-parallel rank's expert_map (linear and round-robin placement). Keep the names."""
from __future__ import annotations

import torch


def expert_map_for_rank(num_experts: int, ep_size: int, ep_rank: int, placement: str = "linear") -> torch.Tensor:
    """int32 [num_experts]: this rank's experts numbered 0.. in global order, -1 for the others."""
    # TODO: validate ep_rank and placement
    # TODO: which experts this rank owns (linear: contiguous, the remainder to the first ranks; round_robin)
    # TODO: number them 0, 1, ... in increasing global order; -1 elsewhere; int32
    raise NotImplementedError("expert_map_for_rank")


def expert_owners(num_experts: int, ep_size: int, placement: str = "linear") -> torch.Tensor:
    """int64 [num_experts]: the rank that owns each expert; ValueError for ep_size < 1 or an unknown placement."""
    # TODO
    raise NotImplementedError("expert_owners")
