# Mistake: register_ops registers LumenRMSNorm under "rms_norm", RMSNorm's registered name, but the replacements are looked up by the in-tree class name, "RMSNorm".
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py', 'CustomOp.register_oot(LumenRMSNorm, name="RMSNorm")',
                 'CustomOp.register_oot(LumenRMSNorm, name="rms_norm")')
