# Mistake: rms_norm does its arithmetic in the input's dtype (no .float()), so bf16 drifts and fp16 overflows where fp32 is asked.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 '''    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)''',
                 '''    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight''')
