# Mistake: the detector asks the Lumen runtime (lumen_npu.device) for the device count, which starts the runtime.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '    return "lumen_npu.platform.LumenPlatform" if device_count() else None',
                 '    from .device import device_count as visible_devices\n\n    return "lumen_npu.platform.LumenPlatform" if visible_devices() else None')
