"""RMSNorm on Ascend: ``torch_npu.npu_rms_norm`` / ``npu_add_rms_norm``, called as vllm-ascend calls them.

vllm-ascend ``ops/layernorm.py`` (v0.9.1 and later): ``x, _ = npu_rms_norm(x, weight, eps)`` and
``x, _, residual = npu_add_rms_norm(x, residual, weight, eps)``; the second output (rstd, kept for
the backward pass) is dropped. torch_npu is imported at call time, so this module imports anywhere.
"""
from __future__ import annotations

import importlib

import torch

from ...ops.cpu.layernorm import check_norm_args


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x * rsqrt(mean(x**2, -1) + eps) * weight`` through ``torch_npu.npu_rms_norm``."""
    torch_npu = importlib.import_module("torch_npu")
    check_norm_args(x, weight)
    out, _ = torch_npu.npu_rms_norm(x, weight, eps)
    return out


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``residual = x + residual``; ``(rms_norm(residual), residual)`` through ``torch_npu.npu_add_rms_norm``."""
    torch_npu = importlib.import_module("torch_npu")
    check_norm_args(x, weight, residual)
    out, _, residual = torch_npu.npu_add_rms_norm(x, residual, weight, eps)
    return out, residual
