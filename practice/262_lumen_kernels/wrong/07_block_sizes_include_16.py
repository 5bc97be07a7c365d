# Mistake: the kernel package declares block size 16 too, disagreeing with the platform's rule.
"""The reference Lumen project with one change in lumen_npu/ops/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/ops/__init__.py',
                 'SUPPORTED_BLOCK_SIZES = (32, 64, 128)',
                 'SUPPORTED_BLOCK_SIZES = (16, 32, 64, 128)')
