# Mistake: the communicator hands Lumen tensors straight to gloo, which takes CPU tensors only.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/communicator.py', '    return torch.ops.lumen.cpu_view(x)', '    return x')
