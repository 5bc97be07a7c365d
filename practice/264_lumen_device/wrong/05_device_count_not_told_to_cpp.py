# Mistake: the C++ device guard is never told how many devices are visible, so it allows only lumen:0 and a tensor on lumen:1 fails.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/device.py', '    library.lumen_set_device_count(max(device_count(), 1))\n', '')
