# Mistake: an unsupported block size fails an assert (AssertionError) instead of raising ValueError.
"""The reference Lumen project with one change in lumen_npu/platform.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py',
                 '    supported_block_sizes = (32, 64, 128)\n',
                 '\n    @classmethod\n    def check_and_update_config(cls, config) -> None:\n        super().check_and_update_config(config)\n        assert config.block_size in (32, 64, 128), f"block_size={config.block_size} is not supported"\n')
