# Mistake: Checks only group_list_type > 1, so a negative type is accepted (and read as a cumsum).
from __future__ import annotations

import torch


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor, group_list_type: int) -> torch.Tensor:
    if group_list_type > 1:
        raise ValueError(f"group_list_type must be 0 (cumsum) or 1 (counts), got {group_list_type}")
    if group_list.numel() != weight.shape[0]:
        raise ValueError(f"group_list has {group_list.numel()} entries for {weight.shape[0]} weights")
    values = [int(v) for v in group_list.tolist()]
    if group_list_type == 1:
        if any(v < 0 for v in values):
            raise ValueError(f"counts must be >= 0, got {values}")
        ends, total = [], 0
        for v in values:
            total += v
            ends.append(total)
    else:
        ends = values
        if any(b < a for a, b in zip([0] + ends, ends)):
            raise ValueError(f"a cumsum group_list must not decrease, got {values}")
    if ends and ends[-1] > x.shape[0]:
        raise ValueError(f"the groups cover {ends[-1]} rows but x has {x.shape[0]}")
    out = torch.zeros(x.shape[0], weight.shape[2], dtype=torch.float32)
    start = 0
    for e, end in enumerate(ends):
        if end > start:
            out[start:end] = x[start:end].float() @ weight[e].float()
        start = end
    return out.to(x.dtype)
