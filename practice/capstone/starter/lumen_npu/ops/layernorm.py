"""RMSNorm on Lumen: computed in fp32, returned in the input's dtype."""
from __future__ import annotations

import torch  # noqa: F401


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x * rsqrt(mean(x**2, -1) + eps) * weight``; x ``[..., H]``, weight ``[H]``."""
    # TODO(stage 262): compute in fp32 (bf16/fp16 arithmetic fails the tests), return in x's dtype even when
    #                  weight's differs; normalize over the last dim of any rank.
    raise NotImplementedError("rms_norm")


def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                       eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``residual = x + residual``; returns ``(rms_norm(residual), residual)``."""
    # TODO(stage 262): the new residual is x + residual in x's dtype; normalize it in fp32.
    raise NotImplementedError("fused_add_rms_norm")
