# Mistake: the pattern lacks the end anchor, so a lock file such as lumen0.lock counts as a device.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '_DEVICE_NODE = re.compile(r"^lumen(\\d+)$")',
                 '_DEVICE_NODE = re.compile(r"^lumen(\\d+)")')
