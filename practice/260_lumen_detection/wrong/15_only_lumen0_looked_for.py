# Mistake: the detector checks only whether <root>/dev/lumen0 exists, so a machine whose visible device is lumen7 (or lumen12) has none.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '''    try:
        return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))
    except OSError:  # no /dev under the root: no device
        return 0''',
                 '''    return 1 if (device_root() / "dev" / "lumen0").exists() else 0''')
