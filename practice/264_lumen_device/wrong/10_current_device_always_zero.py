# Mistake: current_device() always answers 0, whatever set_device chose.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/device.py', '    return _extension.load().lumen_current_device() if _initialized else 0', '    return 0')
