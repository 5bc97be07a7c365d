"""RMSNorm as Triton kernels: one program normalises one row of ``[rows, H]``.

The whole row is loaded as one block (``BLOCK_H`` is the next power of two >= H, masked), so the
mean of squares is a single in-register reduction. Every load is converted to fp32 before any
arithmetic and converted back on store, which keeps fp16/bf16 accurate (and is required under the
Triton interpreter, which miscomputes bf16 arithmetic).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..cpu.layernorm import check_norm_args


@triton.jit
def _rms_norm_kernel(x_ptr, residual_ptr, weight_ptr, out_ptr, residual_out_ptr,
                     x_row_stride, residual_row_stride, out_row_stride, H, eps,
                     HAS_RESIDUAL: tl.constexpr, BLOCK_H: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride can pass 2**31 elements
    cols = tl.arange(0, BLOCK_H)
    mask = cols < H
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        res = tl.load(residual_ptr + row * residual_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        # The new residual is stored in the input dtype and normalised as stored (vLLM's rule).
        summed = (x + res).to(residual_out_ptr.dtype.element_ty)
        tl.store(residual_out_ptr + row * out_row_stride + cols, summed, mask=mask)
        x = summed.to(tl.float32)
    variance = tl.sum(x * x, axis=0) / H
    rstd = 1.0 / tl.sqrt(variance + eps)
    w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def rows_of(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a 2-D ``[rows, H]`` tensor with unit stride along H (a view unless a copy is needed)."""
    return (t if t.stride(-1) == 1 else t.contiguous()).reshape(-1, t.shape[-1])


def _launch(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float):
    check_norm_args(x, weight, residual)
    H = x.shape[-1]
    x2 = rows_of(x)
    out = torch.empty(x2.shape, dtype=x.dtype, device=x.device)
    res2 = rows_of(residual) if residual is not None else x2
    res_out = torch.empty_like(out) if residual is not None else out
    _rms_norm_kernel[(x2.shape[0],)](
        x2, res2, weight.contiguous(), out, res_out,
        x2.stride(0), res2.stride(0), out.stride(0), H, eps,
        HAS_RESIDUAL=residual is not None, BLOCK_H=triton.next_power_of_2(H))
    return out.view(x.shape), res_out.view(x.shape)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x * rsqrt(mean(x**2, -1) + eps) * weight``; x ``[..., H]``; fp32 inside, x's dtype out."""
    return _launch(x, None, weight, eps)[0]


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``residual = x + residual``; returns ``(rms_norm(residual), residual)`` as new tensors."""
    return _launch(x, residual, weight, eps)
