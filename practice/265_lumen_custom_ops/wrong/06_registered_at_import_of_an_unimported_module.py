# Mistake: LumenRMSNorm registers itself with a decorator when lumen_npu.layers is imported, and register_ops does nothing: no one imports lumen_npu.layers, so the engine keeps its RMSNorm.
"""The reference Lumen project with two changes."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/layers.py', '''from mini_platform.model.layers import RMSNorm

from . import custom_ops  # noqa: F401  (defines torch.ops.lumen.rms_norm and fused_add_rms_norm)


class LumenRMSNorm(RMSNorm):''', '''from mini_platform.model.custom_op import CustomOp
from mini_platform.model.layers import RMSNorm

from . import custom_ops  # noqa: F401  (defines torch.ops.lumen.rms_norm and fused_add_rms_norm)


@CustomOp.register_oot(name="RMSNorm")
class LumenRMSNorm(RMSNorm):'''), 'lumen_npu/__init__.py', '''    from mini_platform.model.custom_op import CustomOp

    from .layers import LumenRMSNorm

    CustomOp.register_oot(LumenRMSNorm, name="RMSNorm")
''', '''    # LumenRMSNorm registers itself (a decorator in lumen_npu/layers.py)
''')
