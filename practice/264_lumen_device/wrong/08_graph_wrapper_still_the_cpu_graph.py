# Mistake: the platform still names CPUGraphWrapper, which refuses a model on the lumen device, so graph mode cannot start.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py', '        return "lumen_npu.graph.LumenGraphWrapper"', '        return "mini_platform.compilation.cpu_graph.CPUGraphWrapper"')
