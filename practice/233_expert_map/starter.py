"""Exercise 233: an expert-parallel rank's expert_map (linear and round-robin placement). Keep the names."""
from __future__ import annotations


def determine_expert_map(ep_size: int, ep_rank: int, global_num_experts: int,
                         strategy: str = "linear") -> tuple[int, list[int] | None]:
    """(local_num_experts, expert_map with -1 for experts on other ranks), or (E, None) when ep_size == 1."""
    # TODO: validate; base, rem; how many experts this rank owns; which ones (linear / round_robin)
    raise NotImplementedError("determine_expert_map")


def localize_topk_ids(topk_ids: list[list[int]], expert_map: list[int] | None) -> list[list[int]]:
    """Global expert ids -> local indices (-1 when the expert is on another rank)."""
    # TODO
    raise NotImplementedError("localize_topk_ids")
