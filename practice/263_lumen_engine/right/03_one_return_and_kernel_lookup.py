# Correct: the kernels are looked up with ops.get_kernel(name, self.backend) and called positionally, the result kept in one variable and returned once; the missing-metadata error is worded another way.
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

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py', OLD, '''        md = self.metadata
        if md is None:
            raise RuntimeError("no attention metadata for this forward")
        key_cache, value_cache = self.kv_caches[layer_idx]
        ops.get_kernel("reshape_and_cache", self.backend)(k, v, key_cache, value_cache, md.slot_mapping)
        head_dim = q.shape[2]
        pure_decode = md.max_query_len <= 1 and md.seq_lens.numel() == q.shape[0]
        if pure_decode:
            out = ops.get_kernel("paged_decode_attention", self.backend)(
                q, key_cache, value_cache, md.block_tables, md.seq_lens, head_dim ** -0.5)
        else:
            out = ops.get_kernel("paged_attention", self.backend)(
                q, key_cache, value_cache, md.block_tables, md.query_start_loc, md.seq_lens, head_dim ** -0.5)
        return out''')
