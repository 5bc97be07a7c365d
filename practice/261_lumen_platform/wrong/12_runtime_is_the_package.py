# Mistake: device_module returns the package lumen_npu (whose device_count counts nodes) instead of the runtime lumen_npu.device, so visible devices and synchronize are not the runtime's.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '        return importlib.import_module("lumen_npu.device")',
                 '        return importlib.import_module("lumen_npu")')
