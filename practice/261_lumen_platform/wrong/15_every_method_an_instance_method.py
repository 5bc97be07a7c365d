# Mistake: every platform method is a plain instance method, but the base class's check_and_update_config asks the class for its graph wrapper (cls.get_static_graph_wrapper_cls()), which then fails.
"""The reference Lumen project with the methods of lumen_npu/platform.py made instance methods."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '''    @classmethod
    def get_attn_backend_cls(cls) -> str:
        return "lumen_npu.attention.LumenAttention"

    @classmethod
    def get_static_graph_wrapper_cls(cls) -> str:''',
                 '''    def get_attn_backend_cls(self) -> str:
        return "lumen_npu.attention.LumenAttention"

    def get_static_graph_wrapper_cls(self) -> str:''')
