# Correct: get_attn_backend_cls and get_device_communicator_cls are plain instance methods (the engine asks them of current_platform, an instance); the graph wrapper and device_module are staticmethods.
"""The reference Lumen project with the methods of lumen_npu/platform.py written another way."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '''    @classmethod
    def get_attn_backend_cls(cls) -> str:
        return "lumen_npu.attention.LumenAttention"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:
        # The CPU graph's recorder, accepting Lumen tensors: it records the aten calls above Lumen's kernels.
        return "lumen_npu.graph.LumenGraphWrapper"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        # Lumen memory is host memory: gloo runs on CPU views of it (the CPU communicator underneath).
        return "lumen_npu.communicator.LumenCommunicator"

    @classmethod
    def device_module(cls) -> ModuleType:''',
                 '''    def get_attn_backend_cls(self) -> str:
        return "lumen_npu.attention.LumenAttention"

    @staticmethod
    def get_static_graph_wrapper_cls() -> str:
        return "lumen_npu.graph.LumenGraphWrapper"

    def get_device_communicator_cls(self) -> str:
        return "lumen_npu.communicator.LumenCommunicator"

    @staticmethod
    def device_module() -> ModuleType:''')
