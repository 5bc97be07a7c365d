# Mistake: the mean of squares is taken over dim=1 instead of the last dim, right only for 2-D inputs.
"""The reference Lumen project with one change in lumen_npu/ops/layernorm.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/layernorm.py',
                 'x32.pow(2).mean(dim=-1, keepdim=True)',
                 'x32.pow(2).mean(dim=1, keepdim=True)')
