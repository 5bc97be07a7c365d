# Correct: turns both encodings into a tensor of group offsets (counts via cumsum) with torch ops, validates with tensor comparisons, and fills the output group by group with torch.mm.
from __future__ import annotations

import torch


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor, group_list_type: int) -> torch.Tensor:
    if group_list_type != 0 and group_list_type != 1:
        raise ValueError("group_list_type: 0 = cumsum, 1 = counts")
    num_groups = weight.shape[0]
    if tuple(group_list.shape) != (num_groups,):
        raise ValueError(f"group_list must have {num_groups} entries")
    gl = group_list.to(torch.int64)
    if group_list_type == 1:
        if (gl < 0).any():
            raise ValueError("negative group size")
        ends = torch.cumsum(gl, 0)
    else:
        ends = gl
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), ends[:-1]])
    if (ends < starts).any():
        raise ValueError("group_list decreases")
    if num_groups and int(ends[-1]) > x.shape[0]:
        raise ValueError("groups need more rows than x has")
    out = x.new_zeros(x.shape[0], weight.shape[-1], dtype=torch.float32)
    for e in range(num_groups):
        lo, hi = int(starts[e]), int(ends[e])
        if hi > lo:
            out[lo:hi] = torch.mm(x[lo:hi].to(torch.float32), weight[e].to(torch.float32))
    return out.to(dtype=x.dtype)
