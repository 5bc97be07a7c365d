# Mistake: the fake implementation of lumen::rms_norm says the output is fp32 (the kernel computes in fp32), but the kernel returns x's dtype, so a bf16 model traces with the wrong dtype.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/custom_ops.py', '''    return torch.empty_like(x)''',
                 '''    return torch.empty_like(x, dtype=torch.float32)''')
