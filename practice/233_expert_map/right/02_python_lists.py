# Correct: plain Python lists of owned ids for every rank, the map filled from a dict, the owners from the same lists; expert_owners checks before it loops.
from __future__ import annotations

import torch


def _owned(num_experts: int, ep_size: int, rank: int, placement: str) -> list[int]:
    if placement == "linear":
        sizes = [num_experts // ep_size + (r < num_experts % ep_size) for r in range(ep_size)]
        start = sum(sizes[:rank])
        return list(range(start, start + sizes[rank]))
    if placement == "round_robin":
        return [g for g in range(num_experts) if g % ep_size == rank]
    raise ValueError(f"placement {placement!r} is not 'linear' or 'round_robin'")


def expert_map_for_rank(num_experts: int, ep_size: int, ep_rank: int, placement: str = "linear") -> torch.Tensor:
    if not (ep_size >= 1 and 0 <= ep_rank <= ep_size - 1):
        raise ValueError(f"ep_rank={ep_rank} is not a rank of ep_size={ep_size}")
    local = {g: i for i, g in enumerate(_owned(num_experts, ep_size, ep_rank, placement))}
    return torch.tensor([local.get(g, -1) for g in range(num_experts)], dtype=torch.int32).reshape(num_experts)


def expert_owners(num_experts: int, ep_size: int, placement: str = "linear") -> torch.Tensor:
    if ep_size < 1:
        raise ValueError(f"ep_size={ep_size}: need at least one rank")
    owner = [0] * num_experts
    for rank in range(ep_size):
        for g in _owned(num_experts, ep_size, rank, placement):
            owner[g] = rank
    return torch.tensor(owner, dtype=torch.int64).reshape(num_experts)
