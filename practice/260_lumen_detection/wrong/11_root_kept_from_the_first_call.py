# Mistake: the root is read at the first call and kept, so a later change of LUMEN_DEVICE_ROOT is ignored.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'def device_root() -> Path:\n    return Path(os.environ.get(DEVICE_ROOT_ENV) or "/")',
                 '_ROOT = None\n\n\ndef device_root() -> Path:\n    global _ROOT\n    if _ROOT is None:\n        _ROOT = Path(os.environ.get(DEVICE_ROOT_ENV) or "/")\n    return _ROOT')
