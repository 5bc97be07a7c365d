# Mistake: a step counts as a pure decode when query_start_loc ends at the number of requests, which is also true when padding rows follow, so those go to the decode kernel.
"""The reference Lumen project with one change in lumen_npu/attention.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/attention.py',
                 '        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:',
                 '        if int(md.query_start_loc[-1]) == md.seq_lens.shape[0]:')
