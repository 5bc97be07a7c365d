# Mistake: the platform names the NCCL communicator, whose collectives need CUDA tensors Lumen does not have.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '        return "lumen_npu.communicator.LumenCommunicator"',
                 '        return "mini_platform.distributed.communicator.CudaCommunicator"')
