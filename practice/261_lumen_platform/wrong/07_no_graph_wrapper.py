# Mistake: the platform names no graph wrapper, so the engine can only run eagerly.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '        return "lumen_npu.graph.LumenGraphWrapper"',
                 '        return None')
