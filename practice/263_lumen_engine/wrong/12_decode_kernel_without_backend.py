# Mistake: the decode kernel is called without backend=self.backend, so decode steps run on whatever backend is current instead of the runner's.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '''            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,
                                              backend=self.backend)''',
                 '''            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale)''')
