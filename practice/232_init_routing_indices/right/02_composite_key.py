# Correct: one sort of the key expert * (N*K) + pair for both ops (out-of-range pairs pushed past the end in v2), index_select for the rows, and expanded_scale with N entries as the statement had it before.
from __future__ import annotations

from typing import Sequence

import torch


def _check_int32(**tensors: torch.Tensor) -> None:
    for name, t in tensors.items():
        if t.dtype is not torch.int32:
            raise TypeError(f"{name}: expected torch.int32, got {t.dtype}")


def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor,
                         active_num: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_int32(expert_idx=expert_idx, row_idx=row_idx)
    if x.ndim != 2 or expert_idx.ndim != 2 or row_idx.shape != expert_idx.shape or len(x) != len(expert_idx):
        raise ValueError(f"shapes {tuple(x.shape)}, {tuple(row_idx.shape)}, {tuple(expert_idx.shape)} do not fit")
    n, k = expert_idx.shape
    total = n * k
    experts = expert_idx.flatten().long()
    order = torch.sort(experts * total + torch.arange(total)).indices
    src = row_idx.flatten().long().index_select(0, order)
    inverse = torch.empty(total, dtype=torch.int32)
    inverse.scatter_(0, src, torch.arange(total, dtype=torch.int32))
    keep = max(min(active_num, n), 0) * k
    return x.index_select(0, src[:keep] % max(n, 1)), inverse, experts[order].int()


def npu_moe_init_routing_v2(x: torch.Tensor, expert_idx: torch.Tensor, *, scale: torch.Tensor | None = None,
                            offset: torch.Tensor | None = None, active_num: int = -1, expert_capacity: int = -1,
                            expert_num: int = -1, drop_pad_mode: int = 0, expert_tokens_num_type: int = 0,
                            expert_tokens_num_flag: bool = False, quant_mode: int = -1,
                            active_expert_range: Sequence[int] = (), row_idx_type: int = 0,
                            x_dtype: int | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_int32(expert_idx=expert_idx)
    if x.ndim != 2 or expert_idx.ndim != 2 or len(x) != len(expert_idx):
        raise ValueError(f"x {tuple(x.shape)} and expert_idx {tuple(expert_idx.shape)} do not fit")
    if quant_mode != -1 or drop_pad_mode or row_idx_type or scale is not None or offset is not None:
        raise NotImplementedError("this exercise covers the dropless unquantised gather-index call only")
    if expert_tokens_num_type not in (0, 1):
        raise NotImplementedError(f"expert_tokens_num_type={expert_tokens_num_type}")
    start, end = tuple(active_expert_range) if active_expert_range else (0, expert_num)
    if start < 0 or end < start or end > expert_num:
        raise ValueError(f"active_expert_range ({start}, {end}) must satisfy 0 <= start <= end <= {expert_num}")
    n, k = expert_idx.shape
    total = n * k
    experts = expert_idx.flatten().long()
    if total and not bool(((experts >= 0) & (experts < expert_num)).all()):
        raise ValueError(f"expert ids must be in [0, {expert_num})")
    inside = (experts >= start) & (experts < end)
    key = torch.where(inside, experts, torch.full_like(experts, expert_num)) * total + torch.arange(total)
    order = torch.sort(key).indices
    used = int(inside.sum())
    row_of = torch.full((total,), -1, dtype=torch.int32)
    row_of[order[:used]] = torch.arange(used, dtype=torch.int32)
    counts = torch.zeros(end - start, dtype=torch.int64).index_add_(
        0, experts[inside] - start, torch.ones(used, dtype=torch.int64))
    tokens = counts.cumsum(0) if expert_tokens_num_type == 0 else counts
    rows = total if active_num <= 0 else min(active_num, total)
    out = x.new_zeros(rows, x.shape[1])
    filled = min(rows, used)
    out[:filled] = x.index_select(0, order[:filled] // k)
    if not expert_tokens_num_flag:
        tokens = tokens[:0]
    return out, row_of, tokens, torch.zeros(n, dtype=torch.float32)
