# Mistake: pyproject.toml lists only lumen_npu, so the subpackage lumen_npu.ops is not installed.
"""The reference Lumen project with one change in pyproject.toml."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'pyproject.toml',
                 'packages = ["lumen_npu", "lumen_npu.ops"]',
                 'packages = ["lumen_npu"]')
