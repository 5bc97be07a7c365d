# Mistake: the scale is taken from q.shape[1], the number of heads, instead of the head dimension q.shape[-1].
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        scale = q.shape[-1] ** -0.5',
                 '        scale = q.shape[1] ** -0.5')
