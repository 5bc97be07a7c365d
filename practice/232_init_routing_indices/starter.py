"""Exercise 232: the index arithmetic of npu_moe_init_routing (v1) and npu_moe_init_routing_v2. Keep the names."""
from __future__ import annotations


def init_routing_v1(topk_ids: list[list[int]]) -> tuple[list[int], list[int], list[int]]:
    """Return (gather_rows, expanded_row_idx indexed j*N+t, expanded_expert_idx)."""
    # TODO: validate; row_idx[t][j] = j * N + t; stable sort of the row-major flattened topk_ids
    raise NotImplementedError("init_routing_v1")


def init_routing_v2(topk_ids: list[list[int]], num_experts: int,
                    active_expert_range: list[int] | None = None) -> tuple[list[int], list[int], list[int]]:
    """Return (gather_rows, expanded_row_idx indexed t*K+j with -1 outside the range, counts per expert in range)."""
    # TODO: validate; keep choices with start <= expert < end; sort by (expert, t*K+j)
    raise NotImplementedError("init_routing_v2")
