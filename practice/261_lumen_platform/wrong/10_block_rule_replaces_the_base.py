# Mistake: check_and_update_config is overridden with the block-size rule alone, without calling the base class, so enforce_eager=None never becomes graph mode.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    @classmethod\n    def get_attn_backend_cls(cls) -> str:',
                 '    @classmethod\n    def check_and_update_config(cls, config) -> None:\n        if config.block_size not in (32, 64, 128):\n            raise ValueError(f"block_size={config.block_size} is not supported on Lumen")\n\n    @classmethod\n    def get_attn_backend_cls(cls) -> str:')
