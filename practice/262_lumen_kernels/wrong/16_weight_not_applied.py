# Mistake: rms_norm normalizes but forgets to multiply by the weight (the example's weight of ones hides it).
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 '    return (normed * weight.float()).to(x.dtype)',
                 '    return normed.to(x.dtype)')
