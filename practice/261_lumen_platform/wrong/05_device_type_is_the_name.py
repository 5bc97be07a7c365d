# Mistake: device_type is 'lumen', but nothing imports the Lumen runtime before the engine names the device, so torch has no device 'lumen' (PrivateUse1 was never renamed).
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 'from . import device as _runtime  # noqa: F401\n',
                 '')
