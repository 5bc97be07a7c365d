# Correct: get_attn_backend_cls and get_device_communicator_cls are plain instance methods (the engine asks them of current_platform, an instance); the graph wrapper and device_module are staticmethods.
"""The reference Lumen project with the methods of lumen_npu/platform.py written another way."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '''    @classmethod
    def get_attn_backend_cls(cls) -> str:
        return "lumen_npu.attention.LumenAttention"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        # The Lumen kernels are plain torch, so the CPU graph can record and replay them.
        return "mini_platform.compilation.cpu_graph.CPUGraphWrapper"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        # Lumen tensors live in host memory, so its collectives are gloo's: the CPU communicator serves it.
        return "mini_platform.distributed.communicator.CpuCommunicator"

    @classmethod
    def device_module(cls) -> ModuleType:''',
                 '''    def get_attn_backend_cls(self) -> str:
        return "lumen_npu.attention.LumenAttention"

    @staticmethod
    def get_static_graph_wrapper_cls() -> str:
        return "mini_platform.compilation.cpu_graph.CPUGraphWrapper"

    def get_device_communicator_cls(self) -> str:
        return "mini_platform.distributed.communicator.CpuCommunicator"

    @staticmethod
    def device_module() -> ModuleType:''')
