# Mistake: the pattern is searched anywhere in the name (no start anchor), so a node such as xlumen0 counts as a Lumen device.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 'if _DEVICE_NODE.match(entry.name)',
                 'if re.search(r"lumen\\d+$", entry.name)')
