# Mistake: eps is added after the reciprocal square root instead of inside it.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 'torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)',
                 '(torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True)) + eps)')
