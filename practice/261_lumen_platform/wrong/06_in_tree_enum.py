# Mistake: the platform claims to be the built-in CPU platform (PlatformEnum.CPU) instead of out of tree.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    _enum = PlatformEnum.OOT',
                 '    _enum = PlatformEnum.CPU')
