# Mistake: the device count is cached (functools.cache), so a second call with another LUMEN_DEVICE_ROOT returns the first root's answer.
"""The reference Lumen project with two changes in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/__init__.py', 'import os\n', 'import functools\nimport os\n'),
                 'lumen_npu/__init__.py', 'def device_count() -> int:', '@functools.cache\ndef device_count() -> int:')
