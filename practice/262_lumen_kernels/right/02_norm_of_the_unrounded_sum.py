# Correct: fused_add_rms_norm adds in fp32 and normalizes that unrounded sum (as vLLM's CUDA kernel does), returning the sum rounded to x's dtype; rms_norm divides by sqrt instead of multiplying by rsqrt.
"""The reference Lumen project with lumen_npu/ops/layernorm.py written another way."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                        '''    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)''',
                        '''    x32 = x.to(torch.float32)
    rms = torch.sqrt((x32 * x32).mean(-1, keepdim=True) + eps)
    return (x32 / rms * weight.to(torch.float32)).to(x.dtype)'''),
                 'lumen_npu/ops/layernorm.py',
                 '''    residual = x + residual
    return rms_norm(residual, weight, eps), residual''',
                 '''    total = x.float() + residual.float()
    inv = torch.rsqrt(total.square().mean(-1, keepdim=True) + eps)
    return (total * inv * weight.float()).to(x.dtype), total.to(x.dtype)''')
