# Mistake: the cache is written only on prefill steps (max_query_len > 1), so the decoded tokens' keys and values never reach it.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)',
                 '        if md.max_query_len > 1:\n            ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)')
