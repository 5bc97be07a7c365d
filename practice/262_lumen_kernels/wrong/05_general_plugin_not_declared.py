# Mistake: register_kernels is written but never declared as a general plugin, so nothing calls it.
"""The reference Lumen project with one change in pyproject.toml."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'pyproject.toml',
                 'lumen_kernels = "lumen_npu:register_kernels"',
                 '')
