# Mistake: silu_and_mul computes in the input's dtype (no .float()), so in fp16 a small silu(gate) loses its digits before the multiply.
"""The reference Lumen project with one change in lumen_npu/ops/activation.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/activation.py',
                 '    return (torch.nn.functional.silu(gate.float()) * up.float()).to(x.dtype)',
                 '    return torch.nn.functional.silu(gate) * up')
