# Mistake: gate and up are split along dim=1 instead of the last dim, right only for 2-D inputs.
"""The reference Lumen project with one change in lumen_npu/ops/activation.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/activation.py',
                 '    gate, up = x.chunk(2, dim=-1)',
                 '    gate, up = x.chunk(2, dim=1)')
