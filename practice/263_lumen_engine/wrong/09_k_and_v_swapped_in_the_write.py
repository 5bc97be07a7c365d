# Mistake: the values are written into the key cache and the keys into the value cache.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)',
                 '        ops.reshape_and_cache(v, k, key_cache, value_cache, md.slot_mapping, backend=self.backend)')
