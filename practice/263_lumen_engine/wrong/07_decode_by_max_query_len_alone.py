# Mistake: a step counts as a pure decode whenever max_query_len == 1, without checking one query row per request, so a step with padding rows goes to the decode kernel.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:',
                 '        if md.max_query_len == 1:')
