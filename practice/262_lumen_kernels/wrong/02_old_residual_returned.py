# Mistake: fused_add_rms_norm returns the residual it was given instead of the sum x + residual.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 '    residual = x + residual\n    return rms_norm(residual, weight, eps), residual',
                 '    total = x + residual\n    return rms_norm(total, weight, eps), residual')
