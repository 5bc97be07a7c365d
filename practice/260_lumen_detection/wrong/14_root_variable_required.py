# Mistake: the root is read as os.environ["LUMEN_DEVICE_ROOT"], so the detector raises KeyError where the variable is not set instead of looking at "/".
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'os.environ.get(DEVICE_ROOT_ENV) or "/"',
                 'os.environ[DEVICE_ROOT_ENV]')
