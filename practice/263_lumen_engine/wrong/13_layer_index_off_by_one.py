# Mistake: layer layer_idx uses the caches of layer layer_idx - 1 (layer 0 those of the last layer).
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        key_cache, value_cache = self.kv_caches[layer_idx]',
                 '        key_cache, value_cache = self.kv_caches[layer_idx - 1]')
