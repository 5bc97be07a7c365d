# Mistake: the fake implementation of lumen::rms_norm calls the kernel, which reads Lumen memory through cpu_view: a fake tensor has no data, so tracing fails.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/custom_ops.py', '''    return torch.empty_like(x)''', '''    return rms_norm(x, weight, eps)''')
