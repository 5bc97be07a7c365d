# Correct: rms_norm calls torch.rms_norm on fp32 copies, and silu_and_mul writes silu as gate * sigmoid(gate) on slices x[..., :d] and x[..., d:], all in fp32.
"""The reference Lumen project with the kernels of lumen_npu/ops/ written another way."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                        '''    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)''',
                        '''    return torch.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype)'''),
                 'lumen_npu/ops/activation.py',
                 '''    gate, up = x.chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate.float()) * up.float()).to(x.dtype)''',
                 '''    d = x.shape[-1] // 2
    gate, up = x[..., :d].to(torch.float32), x[..., d:].to(torch.float32)
    return (gate * torch.sigmoid(gate) * up).to(x.dtype)''')
