# Mistake: device_type is set to the platform name 'lumen', but torch has no such device: Lumen's tensors are CPU tensors.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    device_type = "cpu"',
                 '    device_type = "lumen"')
