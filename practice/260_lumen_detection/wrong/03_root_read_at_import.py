# Mistake: the device root is read once at import, so setting LUMEN_DEVICE_ROOT afterwards is ignored.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'def device_root() -> Path:\n    return Path(os.environ.get(DEVICE_ROOT_ENV) or "/")',
                 '_ROOT = Path(os.environ.get(DEVICE_ROOT_ENV) or "/")\n\n\ndef device_root() -> Path:\n    return _ROOT')
