# Correct: LumenAttention.__call__ hands the whole step to PagedAttention.__call__ (super()), which writes the cache and picks the kernel the same way.
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

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py', OLD, '''        return super().__call__(layer_idx, q, k, v)''')
