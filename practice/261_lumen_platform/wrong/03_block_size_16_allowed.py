# Mistake: the block-size rule also lets 16 through, the engine's default, which Lumen's attention kernel cannot tile.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    supported_block_sizes = (32, 64, 128)',
                 '    supported_block_sizes = (16, 32, 64, 128)')
