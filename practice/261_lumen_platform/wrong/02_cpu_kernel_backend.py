# Mistake: kernel_backend is 'cpu', so the engine would silently run the CPU kernels instead of Lumen's.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    kernel_backend = "lumen"',
                 '    kernel_backend = "cpu"')
