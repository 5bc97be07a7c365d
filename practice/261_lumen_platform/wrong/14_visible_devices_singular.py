# Mistake: the visible-devices variable is spelled LUMEN_VISIBLE_DEVICE (singular), so the devices a launcher hides stay visible.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    device_control_env_var = "LUMEN_VISIBLE_DEVICES"',
                 '    device_control_env_var = "LUMEN_VISIBLE_DEVICE"')
