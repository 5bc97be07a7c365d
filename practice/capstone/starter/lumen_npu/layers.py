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
    # TODO(stage 265): forward_oot(x, residual=None), what the Lumen platform runs instead of RMSNorm's forward_native:
    #                  without a residual, torch.ops.lumen.rms_norm(x, self.weight, self.eps); with one,
    #                  torch.ops.lumen.fused_add_rms_norm (in place), returning (normed, new residual) as RMSNorm does.
    pass
