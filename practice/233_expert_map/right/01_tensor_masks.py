# Correct: checks the placement before the rank, builds the map from tensor masks and a cumsum, and computes the owners with closed formulas.
from __future__ import annotations

import torch

PLACEMENTS = ("linear", "round_robin")


def _owned_mask(num_experts: int, ep_size: int, ep_rank: int, placement: str) -> torch.Tensor:
    g = torch.arange(num_experts)
    if placement == "round_robin":
        return g % ep_size == ep_rank
    base, rem = num_experts // ep_size, num_experts % ep_size
    start = ep_rank * base + min(ep_rank, rem)
    return (g >= start) & (g < start + base + int(ep_rank < rem))


def expert_map_for_rank(num_experts: int, ep_size: int, ep_rank: int, placement: str = "linear") -> torch.Tensor:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement: one of {PLACEMENTS}, not {placement}")
    if ep_size < 1 or ep_rank < 0 or ep_rank >= ep_size:
        raise ValueError(f"no rank {ep_rank} among {ep_size}")
    mask = _owned_mask(num_experts, ep_size, ep_rank, placement)
    local = torch.cumsum(mask.int(), 0) - 1
    return torch.where(mask, local, torch.full_like(local, -1)).to(torch.int32)


def expert_owners(num_experts: int, ep_size: int, placement: str = "linear") -> torch.Tensor:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement: one of {PLACEMENTS}, not {placement}")
    if ep_size <= 0:
        raise ValueError("ep_size must be positive")
    g = torch.arange(num_experts, dtype=torch.int64)
    if placement == "round_robin":
        return g % ep_size
    base, rem = divmod(num_experts, ep_size)
    big = rem * (base + 1)                       # the experts of the first rem ranks
    later = rem + (g - big) // max(base, 1)
    return torch.where(g < big, g // (base + 1), later)
