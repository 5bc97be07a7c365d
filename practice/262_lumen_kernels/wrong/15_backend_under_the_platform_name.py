# Mistake: the backend is registered under the package's name lumen_npu instead of "lumen", the name LumenPlatform.kernel_backend gives.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '    ops.register_backend("lumen", "lumen_npu.ops")',
                 '    ops.register_backend("lumen_npu", "lumen_npu.ops")')
