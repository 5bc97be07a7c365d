# Mistake: Returns arange(E) for ep_size == 1 before any check, so ep_rank = 1 or an unknown placement passes on one rank.
from __future__ import annotations

import torch


def expert_map_for_rank(num_experts: int, ep_size: int, ep_rank: int, placement: str = "linear") -> torch.Tensor:
    if ep_size == 1:
        return torch.arange(num_experts, dtype=torch.int32)
    if not 0 <= ep_rank < ep_size:
        raise ValueError(f"ep_rank must be in [0, ep_size={ep_size}), got {ep_rank}")
    if placement == "linear":
        base, rest = divmod(num_experts, ep_size)
        start = ep_rank * base + min(ep_rank, rest)
        owned = list(range(start, start + base + (ep_rank < rest)))
    elif placement == "round_robin":
        owned = list(range(ep_rank, num_experts, ep_size))
    else:
        raise ValueError(f"unknown expert placement {placement!r}; use 'linear' or 'round_robin'")
    expert_map = torch.full((num_experts,), -1, dtype=torch.int32)
    for local, g in enumerate(owned):
        expert_map[g] = local
    return expert_map


def expert_owners(num_experts: int, ep_size: int, placement: str = "linear") -> torch.Tensor:
    if ep_size < 1:
        raise ValueError(f"ep_size must be >= 1, got {ep_size}")
    owners = torch.empty(num_experts, dtype=torch.int64)
    for rank in range(ep_size):
        owners[expert_map_for_rank(num_experts, ep_size, rank, placement) >= 0] = rank
    return owners
