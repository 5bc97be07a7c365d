# Mistake: the platform names the CUDA graph wrapper, copied from the CUDA platform, which cannot run on Lumen.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '        return "lumen_npu.graph.LumenGraphWrapper"',
                 '        return "mini_platform.compilation.cuda_graph.CUDAGraphWrapper"')
