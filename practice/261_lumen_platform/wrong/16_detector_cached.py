# Mistake: the detector caches its device count (functools.cache), so once a device was seen the platform is still chosen after the nodes are gone.
"""The reference Lumen project with two changes in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/__init__.py', 'import os\n', 'import functools\nimport os\n'),
                 'lumen_npu/__init__.py', 'def device_count() -> int:', '@functools.cache\ndef device_count() -> int:')
