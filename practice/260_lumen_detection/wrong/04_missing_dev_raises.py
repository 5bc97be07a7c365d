# Mistake: the detector lists <root>/dev without handling a missing folder, so it raises instead of returning None.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '    try:\n        return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))\n    except OSError:  # no /dev under the root: no device\n        return 0',
                 '    return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))')
