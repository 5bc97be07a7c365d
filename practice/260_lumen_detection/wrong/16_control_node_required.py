# Mistake: the detector also requires the control node lumen_ctl, so device nodes without it are not found.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '    return "lumen_npu.platform.LumenPlatform" if device_count() else None',
                 '    has_ctl = (device_root() / "dev" / "lumen_ctl").exists()\n    return "lumen_npu.platform.LumenPlatform" if has_ctl and device_count() else None')
