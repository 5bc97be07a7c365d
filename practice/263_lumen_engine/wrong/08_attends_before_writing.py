# Mistake: attention runs before the step's keys and values are written, so each new token cannot see itself (nor the rest of its own chunk).
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '''        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)
        scale = q.shape[-1] ** -0.5
        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:
            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,
                                              backend=self.backend)
        return ops.paged_attention(q, key_cache, value_cache, md.block_tables, md.query_start_loc, md.seq_lens,
                                   scale, backend=self.backend)''',
                 '''        scale = q.shape[-1] ** -0.5
        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:
            out = ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,
                                             backend=self.backend)
        else:
            out = ops.paged_attention(q, key_cache, value_cache, md.block_tables, md.query_start_loc, md.seq_lens,
                                      scale, backend=self.backend)
        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)
        return out''')
