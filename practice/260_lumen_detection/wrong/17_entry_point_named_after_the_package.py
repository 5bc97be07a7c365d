# Mistake: the entry point is named lumen_npu (the package) instead of lumen, the name MINI_PLATFORM=lumen selects.
"""The reference Lumen project with one change in pyproject.toml."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'pyproject.toml',
                 'lumen = "lumen_npu:register"',
                 'lumen_npu = "lumen_npu:register"')
