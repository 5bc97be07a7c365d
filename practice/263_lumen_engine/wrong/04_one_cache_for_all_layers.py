# Mistake: every layer reads and writes the first layer's cache instead of its own.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        key_cache, value_cache = self.kv_caches[layer_idx]',
                 '        key_cache, value_cache = self.kv_caches[0]')
