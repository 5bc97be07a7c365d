# Mistake: the backend is registered as the package lumen_npu instead of lumen_npu.ops, so no kernel module is found.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '    ops.register_backend("lumen", "lumen_npu.ops")',
                 '    ops.register_backend("lumen", "lumen_npu")')
