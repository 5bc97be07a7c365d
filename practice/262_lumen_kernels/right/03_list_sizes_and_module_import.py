# Correct: SUPPORTED_BLOCK_SIZES is a list, and register_kernels imports mini_platform.ops as a module (import ... as) inside the function.
"""The reference Lumen project with two changes: lumen_npu/ops/__init__.py and lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/ops/__init__.py',
                        'SUPPORTED_BLOCK_SIZES = (32, 64, 128)',
                        'SUPPORTED_BLOCK_SIZES = [32, 64, 128]'),
                 'lumen_npu/__init__.py',
                 '''    from mini_platform import ops

    ops.register_backend("lumen", "lumen_npu.ops")''',
                 '''    import mini_platform.ops as kernel_registry

    kernel_registry.register_backend(name="lumen", package="lumen_npu.ops")''')
