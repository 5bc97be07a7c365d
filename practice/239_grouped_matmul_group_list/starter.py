"""Exercise 239: the M-axis grouping of torch_npu.npu_grouped_matmul (group_list as cumsum or counts). Keep the names."""
from __future__ import annotations

import torch


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor, group_list_type: int) -> torch.Tensor:
    """out[start_e:end_e] = x[start_e:end_e] @ weight[e]; rows after the last group are 0. See problem.md."""
    # TODO: validate (a cumsum starts from 0); turn group_list into row boundaries (type 0: ends, type 1: counts)
    # TODO: one matmul per non-empty group in fp32; cast back to x's dtype
    raise NotImplementedError("grouped_matmul")
