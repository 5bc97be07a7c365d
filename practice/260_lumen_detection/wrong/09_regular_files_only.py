# Mistake: only regular files count (is_file()), but real device nodes are character devices, so no real Lumen is ever found.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'if _DEVICE_NODE.match(entry.name)',
                 'if entry.is_file() and _DEVICE_NODE.match(entry.name)')
