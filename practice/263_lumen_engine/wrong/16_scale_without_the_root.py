# Mistake: the scale is 1 / head_dim instead of 1 / sqrt(head_dim).
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        scale = q.shape[-1] ** -0.5',
                 '        scale = 1.0 / q.shape[-1]')
