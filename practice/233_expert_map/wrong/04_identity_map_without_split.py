# Mistake: Returns an identity map instead of None when ep_size == 1.
from __future__ import annotations

STRATEGIES = ("linear", "round_robin")


def determine_expert_map(ep_size: int, ep_rank: int, global_num_experts: int,
                         strategy: str = "linear") -> tuple[int, list[int] | None]:
    if ep_size < 1 or not 0 <= ep_rank < ep_size:
        raise ValueError(f"need ep_size >= 1 and 0 <= ep_rank < ep_size, got {ep_size}, {ep_rank}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown placement strategy {strategy!r}; expected one of {STRATEGIES}")
    if ep_size == 1:
        return global_num_experts, list(range(global_num_experts))
    base, rem = divmod(global_num_experts, ep_size)
    local = base + 1 if ep_rank < rem else base
    if strategy == "linear":
        start = ep_rank * base + min(ep_rank, rem)
        owned = range(start, start + local)
    else:
        owned = range(ep_rank, global_num_experts, ep_size)
    expert_map = [-1] * global_num_experts
    for i, g in enumerate(owned):
        expert_map[g] = i
    return local, expert_map


def localize_topk_ids(topk_ids: list[list[int]], expert_map: list[int] | None) -> list[list[int]]:
    if expert_map is None:
        return [list(row) for row in topk_ids]
    return [[expert_map[e] for e in row] for row in topk_ids]
