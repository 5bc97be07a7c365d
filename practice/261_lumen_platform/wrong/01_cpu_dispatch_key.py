# Mistake: the platform keeps the CPU dispatch key instead of PrivateUse1, the key out-of-tree devices register under.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    dispatch_key = "PrivateUse1"',
                 '    dispatch_key = "CPU"')
