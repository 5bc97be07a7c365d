"""LumenRMSNorm: the engine's RMSNorm, computed by Lumen's custom ops (vllm-ascend's ``AscendRMSNorm`` pattern).

It subclasses the in-tree ``RMSNorm``, so the model builds it with the same arguments and the checkpoint loads
into the same ``weight``; it overrides only ``forward_oot``, the forward an out-of-tree platform runs.
``lumen_npu.register_ops`` makes the engine build it wherever the model asks for an ``RMSNorm``.
"""
from __future__ import annotations

import torch

from mini_platform.model.layers import RMSNorm

from . import custom_ops  # noqa: F401  (defines torch.ops.lumen.rms_norm and fused_add_rms_norm)


class LumenRMSNorm(RMSNorm):
    def forward_oot(self, x: torch.Tensor,
                    residual: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            return torch.ops.lumen.rms_norm(x, self.weight, self.eps)
        torch.ops.lumen.fused_add_rms_norm(x, residual, self.weight, self.eps)
        return x, residual
