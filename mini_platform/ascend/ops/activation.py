"""SiLU-and-multiply on Ascend: ``torch_npu.npu_swiglu(x)`` (the first half of the last dim is the gate),
as vllm-ascend's ``AscendSiluAndMul`` calls it. torch_npu is imported at call time."""
from __future__ import annotations

import importlib

import torch

from ...ops.cpu.activation import check_gate_up


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``silu(x[..., :d]) * x[..., d:]`` for x ``[..., 2d]``."""
    torch_npu = importlib.import_module("torch_npu")
    check_gate_up(x)
    return torch_npu.npu_swiglu(x)
