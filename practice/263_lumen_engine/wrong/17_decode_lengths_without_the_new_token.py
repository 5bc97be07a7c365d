# Mistake: the decode kernel gets seq_lens - 1, as if seq_lens did not count the token just written, so each decode step ignores its own key.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,',
                 '            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens - 1, scale,')
