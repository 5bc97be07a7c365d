"""Exercise 232: torch_npu's npu_moe_init_routing (v1) and npu_moe_init_routing_v2. Keep the names."""
from __future__ import annotations

from typing import Sequence

import torch


def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor,
                         active_num: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """v1: (expanded_x, expanded_row_idx, expanded_expert_idx); see problem.md."""
    # TODO: check dtypes (int32) and shapes; order = stable argsort of expert_idx flattened row by row
    # TODO: src = row_idx flattened, taken in that order; expanded_row_idx[src] = 0, 1, 2, ...
    # TODO: expanded_x = x[src[:min(active_num, N) * K] % N]; expanded_expert_idx = the sorted expert ids
    raise NotImplementedError("npu_moe_init_routing")


def npu_moe_init_routing_v2(x: torch.Tensor, expert_idx: torch.Tensor, *, scale: torch.Tensor | None = None,
                            offset: torch.Tensor | None = None, active_num: int = -1, expert_capacity: int = -1,
                            expert_num: int = -1, drop_pad_mode: int = 0, expert_tokens_num_type: int = 0,
                            expert_tokens_num_flag: bool = False, quant_mode: int = -1,
                            active_expert_range: Sequence[int] = (), row_idx_type: int = 0,
                            x_dtype: int | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """v2: (expanded_x, expanded_row_idx, expert_tokens, expanded_scale); see problem.md."""
    # TODO: refuse the options this exercise leaves out (NotImplementedError); check dtypes, shapes, the range, the ids
    # TODO: the pairs t*K + j whose expert is in [start, end), sorted by expert, then by pair
    # TODO: expanded_row_idx[pair] = its sorted row (gather index), -1 for the pairs out of range
    # TODO: per-expert counts (type 1) or their cumsum (type 0), int64; empty without expert_tokens_num_flag
    # TODO: expanded_x: N*K rows (or min(active_num, N*K)), x[pair // K] for the sorted pairs, zeros after, x's dtype
    # TODO: expanded_scale: fp32 zeros, one per row of expanded_x
    raise NotImplementedError("npu_moe_init_routing_v2")
