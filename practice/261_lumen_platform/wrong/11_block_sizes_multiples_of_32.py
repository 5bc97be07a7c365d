# Mistake: the block-size rule accepts every multiple of 32 (96, 256, ...) instead of exactly 32, 64 and 128.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    supported_block_sizes = (32, 64, 128)\n',
                 '\n    @classmethod\n    def supports_block_size(cls, block_size: int) -> bool:\n        return block_size % 32 == 0\n')
