# Correct: no supported_block_sizes attribute; check_and_update_config runs the base rules first, then raises its own ValueError worded another way.
"""The reference Lumen project with the block-size rule of lumen_npu/platform.py written another way."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '''    supported_block_sizes = (32, 64, 128)
''',
                 '''
    @classmethod
    def check_and_update_config(cls, config) -> None:
        super().check_and_update_config(config)
        if config.block_size not in {32, 64, 128}:
            raise ValueError(f"Lumen tiles the KV cache in 32-token tiles: block_size must be 32, 64 or 128, "
                             f"not {config.block_size}")
''')
