"""Emulated ``torch_npu.npu_rms_norm`` and ``torch_npu.npu_add_rms_norm``.

Sources: the schemas and meta functions of the torch-npu 2.13.0 wheel (signatures, output shapes and dtypes;
tests/test_torch_npu_wheel.py compares them); its ``torch_npu/_op_plugin_docs.py`` for ``npu_rms_norm`` ("第2个输出
为Tensor，rms_norm的reverse rms中间结果，用于反向计算"; that release documents no ``npu_add_rms_norm``); the op-plugin
API pages ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_rms_norm.md`` / ``torch_npu-npu_add_rms_norm.md`` (formula ``y = x * rsqrt(mean(x**2) + eps) * gamma`` over the trailing ``gamma.dim()`` dims; rstd is
the fp32 reciprocal RMS, kept for the backward pass) and the numpy reference in op-plugin
``test/test_custom_ops/test_npu_add_rms_norm.py`` (``x = x1 + x2`` in the input dtype, then the norm
in fp32). Emulation note: verified against an emulation of torch_npu semantics; not run on Ascend
hardware here.
"""
from __future__ import annotations

import torch

__all__ = ["npu_rms_norm", "npu_add_rms_norm"]

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check(x: torch.Tensor, gamma: torch.Tensor, op: str) -> None:
    if x.dtype not in _DTYPES:
        raise TypeError(f"{op}: input dtype {x.dtype} is not supported (float16, bfloat16, float32)")
    if gamma.dim() == 0 or gamma.dim() > x.dim() or tuple(x.shape[-gamma.dim():]) != tuple(gamma.shape):
        raise ValueError(f"{op}: gamma shape {tuple(gamma.shape)} must equal the trailing dims of "
                         f"x shape {tuple(x.shape)}")


def _rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    x32 = x.float()
    rstd = torch.rsqrt(x32.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return (x32 * rstd * gamma.float()).to(x.dtype), rstd


def npu_rms_norm(self: torch.Tensor, gamma: torch.Tensor, epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y, rstd)``: y in x's dtype; rstd fp32 of shape ``x.shape[:-gamma.dim()] + (1,) * gamma.dim()``."""
    _check(self, gamma, "npu_rms_norm")
    return _rms_norm(self, gamma, epsilon)


def npu_add_rms_norm(x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor,
                     epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(y, rstd, x)`` with ``x = x1 + x2`` (in the input dtype) and ``(y, rstd) = npu_rms_norm(x, gamma)``."""
    _check(x1, gamma, "npu_add_rms_norm")
    if x1.shape != x2.shape or x1.dtype != x2.dtype:
        raise ValueError(f"npu_add_rms_norm: x1 {tuple(x1.shape)} {x1.dtype} and x2 {tuple(x2.shape)} {x2.dtype} "
                         f"must have the same shape and dtype")
    x = (x1.float() + x2.float()).to(x1.dtype)
    y, rstd = _rms_norm(x, gamma, epsilon)
    return y, rstd, x
