# Mistake: the detector reads MINI_PLATFORM=lumen as "a Lumen is present", so forcing the platform on a machine without a device node selects it instead of raising PlatformResolutionError.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'return "lumen_npu.platform.LumenPlatform" if device_count() else None',
                 'selected = os.environ.get("MINI_PLATFORM") == "lumen"\n    return "lumen_npu.platform.LumenPlatform" if selected or device_count() else None')
