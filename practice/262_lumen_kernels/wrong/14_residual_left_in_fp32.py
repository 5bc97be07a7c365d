# Mistake: fused_add_rms_norm adds in fp32 and returns that fp32 sum as the new residual instead of the sum in x's dtype.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 '    residual = x + residual\n    return rms_norm(residual, weight, eps), residual',
                 '    residual = x.float() + residual.float()\n    return rms_norm(residual, weight, eps).to(x.dtype), residual')
