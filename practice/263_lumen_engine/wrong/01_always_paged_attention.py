# Mistake: every step uses paged_attention, whose host-side loop a decode graph cannot record, so graph mode falls back to eager.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:\n            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,\n                                              backend=self.backend)\n',
                 '')
