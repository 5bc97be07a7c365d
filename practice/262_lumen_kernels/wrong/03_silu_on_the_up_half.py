# Mistake: silu is applied to the second half (up) instead of the first half (the gate).
"""The reference Lumen project with one change in lumen_npu/ops/activation.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/activation.py',
                 '    gate, up = x.chunk(2, dim=-1)',
                 '    up, gate = x.chunk(2, dim=-1)')
