# Correct: a pure decode is recognised from max_query_len and one block-table row per query row (shapes only); the scale is 1 / math.sqrt(head_dim); no check for missing metadata.
"""The reference Lumen project with LumenAttention.__call__ written another way in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

OLD = '''        md = self.metadata
        if md is None:
            raise RuntimeError("LumenAttention.metadata is not set: the model runner sets it before each forward")
        key_cache, value_cache = self.kv_caches[layer_idx]
        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)
        scale = q.shape[-1] ** -0.5
        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:
            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,
                                              backend=self.backend)
        return ops.paged_attention(q, key_cache, value_cache, md.block_tables, md.query_start_loc, md.seq_lens,
                                   scale, backend=self.backend)'''

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py', OLD, '''        import math

        md = self.metadata
        keys, values = self.kv_caches[layer_idx]
        ops.reshape_and_cache(k, v, keys, values, md.slot_mapping, backend=self.backend)
        scale = 1.0 / math.sqrt(q.size(-1))
        if md.max_query_len == 1 and q.size(0) == md.block_tables.size(0):
            return ops.paged_decode_attention(q, keys, values, md.block_tables, md.seq_lens, scale, backend=self.backend)
        return ops.paged_attention(q, keys, values, md.block_tables, md.query_start_loc, md.seq_lens, scale,
                                   backend=self.backend)''')
