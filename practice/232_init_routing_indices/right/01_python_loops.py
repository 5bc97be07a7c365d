# Correct: plain Python sorting with sorted(key=(expert, pair)) and index lists, shapes checked before dtypes, other messages; no NotImplementedError for the options left out.
from __future__ import annotations

from typing import Sequence

import torch


def npu_moe_init_routing(x: torch.Tensor, row_idx: torch.Tensor, expert_idx: torch.Tensor,
                         active_num: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if x.dim() != 2 or expert_idx.dim() != 2 or tuple(row_idx.shape) != tuple(expert_idx.shape) \
            or expert_idx.shape[0] != x.shape[0]:
        raise ValueError("shape mismatch")
    if row_idx.dtype != torch.int32 or expert_idx.dtype != torch.int32:
        raise TypeError("int32 indices required")
    n, k = expert_idx.shape
    flat = expert_idx.flatten().tolist()
    numbers = row_idx.flatten().tolist()
    order = sorted(range(n * k), key=lambda i: (flat[i], i))
    src = [numbers[i] for i in order]
    where = [0] * (n * k)
    for d, s in enumerate(src):
        where[s] = d
    keep = src[:min(active_num, n) * k]
    expanded_x = x[torch.tensor([s % n for s in keep], dtype=torch.long)] if keep else x[:0]
    return (expanded_x, torch.tensor(where, dtype=torch.int32),
            torch.tensor([flat[i] for i in order], dtype=torch.int32))


def npu_moe_init_routing_v2(x: torch.Tensor, expert_idx: torch.Tensor, *, scale: torch.Tensor | None = None,
                            offset: torch.Tensor | None = None, active_num: int = -1, expert_capacity: int = -1,
                            expert_num: int = -1, drop_pad_mode: int = 0, expert_tokens_num_type: int = 0,
                            expert_tokens_num_flag: bool = False, quant_mode: int = -1,
                            active_expert_range: Sequence[int] = (), row_idx_type: int = 0,
                            x_dtype: int | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    if x.dim() != 2 or expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0]:
        raise ValueError("x and expert_idx do not match")
    if expert_idx.dtype != torch.int32:
        raise TypeError("expert_idx: int32 only")
    lo, hi = (active_expert_range[0], active_expert_range[1]) if len(active_expert_range) else (0, expert_num)
    if not (0 <= lo <= hi <= expert_num):
        raise ValueError(f"bad expert range [{lo}, {hi}) for {expert_num} experts")
    n, k = expert_idx.shape
    flat = expert_idx.flatten().tolist()
    if any(e < 0 or e >= expert_num for e in flat):
        raise ValueError("expert id out of range")
    taking_part = sorted((e, i) for i, e in enumerate(flat) if lo <= e < hi)
    where = [-1] * (n * k)
    for d, (_, i) in enumerate(taking_part):
        where[i] = d
    counts = [0] * (hi - lo)
    for e, _ in taking_part:
        counts[e - lo] += 1
    if expert_tokens_num_type == 0:
        for i in range(1, len(counts)):
            counts[i] += counts[i - 1]
    rows = min(active_num, n * k) if active_num > 0 else n * k
    expanded_x = x.new_zeros(rows, x.shape[1])
    for d, (_, i) in enumerate(taking_part[:rows]):
        expanded_x[d] = x[i // k]
    tokens = torch.tensor(counts if expert_tokens_num_flag else [], dtype=torch.int64)
    return expanded_x, torch.tensor(where, dtype=torch.int32), tokens, torch.zeros(rows)
