# Mistake: LumenRMSNorm is written from scratch as a CustomOp instead of subclassing RMSNorm, so the engine cannot build it in RMSNorm's place (its arguments and its weight for the checkpoint are RMSNorm's).
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/layers.py', '''from mini_platform.model.layers import RMSNorm

from . import custom_ops  # noqa: F401  (defines torch.ops.lumen.rms_norm and fused_add_rms_norm)


class LumenRMSNorm(RMSNorm):
''', '''from mini_platform.model.custom_op import CustomOp

from . import custom_ops  # noqa: F401  (defines torch.ops.lumen.rms_norm and fused_add_rms_norm)


class LumenRMSNorm(CustomOp):
    def __init__(self, dim: int, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(dim, dtype=dtype), requires_grad=False)
        self.eps = eps

    @property
    def weight(self) -> torch.Tensor:
        return self.gamma

''')
