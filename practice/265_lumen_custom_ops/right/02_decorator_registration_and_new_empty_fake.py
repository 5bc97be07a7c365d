# Correct: LumenRMSNorm registers itself with the decorator @RMSNorm.register_oot when lumen_npu.layers is imported, and register_ops imports that module on Lumen; the fake is written x.new_empty(x.shape).
"""The reference Lumen project with three changes."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(mutate(REFERENCE, 'lumen_npu/layers.py', '''class LumenRMSNorm(RMSNorm):''', '''@RMSNorm.register_oot
class LumenRMSNorm(RMSNorm):'''), 'lumen_npu/__init__.py', '''    from mini_platform.model.custom_op import CustomOp

    from .layers import LumenRMSNorm

    CustomOp.register_oot(LumenRMSNorm, name="RMSNorm")
''', '''    from . import layers  # noqa: F401  (LumenRMSNorm registers itself: @RMSNorm.register_oot)
'''), 'lumen_npu/custom_ops.py', '''    return torch.empty_like(x)''', '''    return x.new_empty(x.shape)''')
