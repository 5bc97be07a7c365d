# Correct: gives every row its group id with searchsorted over the ends and multiplies row by row through a gathered weight (bmm), rows in no group left at zero.
from __future__ import annotations

import torch


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor, group_list_type: int) -> torch.Tensor:
    values = group_list.tolist()
    if len(values) != weight.shape[0]:
        raise ValueError("one group_list entry per weight is required")
    if group_list_type == 1:
        if min(values, default=0) < 0:
            raise ValueError("counts cannot be negative")
        ends, acc = [], 0
        for v in values:
            acc += v
            ends.append(acc)
    elif group_list_type == 0:
        ends = values
        previous = 0
        for v in ends:
            if v < previous:
                raise ValueError("cumulative group_list went down")
            previous = v
    else:
        raise ValueError(f"unknown group_list_type {group_list_type}")
    m = x.shape[0]
    covered = ends[-1] if ends else 0
    if covered > m:
        raise ValueError(f"{covered} grouped rows, x has {m}")
    out = torch.zeros(m, weight.shape[2], dtype=torch.float32)
    if covered:
        owner = torch.searchsorted(torch.tensor(ends), torch.arange(covered), right=True)
        rows = x[:covered].float().unsqueeze(1)
        out[:covered] = torch.bmm(rows, weight.float()[owner]).squeeze(1)
    return out.to(x.dtype)
