"""RMSNorm in plain torch: the specification of ``rms_norm`` and ``fused_add_rms_norm``."""
from __future__ import annotations

import torch

from . import compiled


def check_norm_args(x: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor | None = None) -> None:
    """Validate the shapes every backend relies on: weight ``[H]`` for x ``[..., H]``, residual shaped like x."""
    if weight.shape != (x.shape[-1],):
        raise ValueError(f"weight must have shape ({x.shape[-1]},) to match x's last dim, got {tuple(weight.shape)}")
    if residual is not None and residual.shape != x.shape:
        raise ValueError(f"residual shape {tuple(residual.shape)} must equal x shape {tuple(x.shape)}")


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x * rsqrt(mean(x**2, -1) + eps) * weight`` over the last dim, in fp32, returned in x's dtype."""
    check_norm_args(x, weight)
    if compiled.available_widened(x, weight):
        return compiled.rms_norm(x, weight, eps)   # fp32 or bf16 with numba: one call instead of torch's several
    # torch's rms_norm is exactly this formula, computed in fp32 and returned in x's dtype (one call instead of
    # five small ones). With mixed dtypes it computes the same but warns, so those are converted here first.
    if weight.dtype != x.dtype:
        return torch.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype)
    return torch.rms_norm(x, (x.shape[-1],), weight, eps)


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``residual = x + residual`` (rounded to x's dtype), then ``(rms_norm(residual), residual)``."""
    check_norm_args(x, weight, residual)
    if compiled.available_widened(x, residual, weight):
        return compiled.rms_norm(x, weight, eps, residual)   # fp32 or bf16 with numba: one call
    # Same dtypes: torch adds in fp32 and rounds once, as the conversions would.
    summed = x + residual if x.dtype == residual.dtype else (x.float() + residual.float()).to(x.dtype)
    return rms_norm(summed, weight, eps), summed
