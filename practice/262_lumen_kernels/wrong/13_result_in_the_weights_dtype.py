# Mistake: rms_norm returns its result in the weight's dtype instead of x's, so an fp32 weight gives an fp32 result for a bf16 x.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 '    return (normed * weight.float()).to(x.dtype)',
                 '    return (normed * weight.float()).to(weight.dtype)')
