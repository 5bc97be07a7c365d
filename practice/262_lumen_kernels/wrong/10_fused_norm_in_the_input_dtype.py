# Mistake: fused_add_rms_norm normalizes the sum with its own arithmetic in the input's dtype instead of fp32.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 '    return rms_norm(residual, weight, eps), residual',
                 '    return residual * torch.rsqrt(residual.pow(2).mean(dim=-1, keepdim=True) + eps) * weight, residual')
