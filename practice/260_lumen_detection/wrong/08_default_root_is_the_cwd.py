# Mistake: without LUMEN_DEVICE_ROOT the detector looks in the current directory (".") instead of "/".
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'os.environ.get(DEVICE_ROOT_ENV) or "/"',
                 'os.environ.get(DEVICE_ROOT_ENV, ".")')
