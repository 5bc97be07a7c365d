# Correct: validates every request in a first pass (with its own wording), then builds each list with its own comprehension; the slot computed with divmod, the offsets with itertools.accumulate.
from __future__ import annotations

from itertools import accumulate


def build_step_metadata(requests, block_size):
    for table, computed, new in requests:
        if new < 1:
            raise ValueError(f"num_new={new}: a scheduled request computes at least one token")
        if computed < 0:
            raise ValueError(f"num_computed={computed} is negative")
        if len(table) * block_size < computed + new:
            raise ValueError(f"block table {table} too short for {computed + new} tokens")

    def slot(table, p):
        index, offset = divmod(p, block_size)
        return table[index] * block_size + offset

    longest = max([len(t) for t, _, _ in requests] or [0])
    return {
        "slot_mapping": [slot(t, p) for t, c, n in requests for p in range(c, c + n)],
        "query_start_loc": list(accumulate((n for _, _, n in requests), initial=0)),
        "seq_lens": [c + n for _, c, n in requests],
        "block_tables": [[*t, *([0] * (longest - len(t)))] for t, _, _ in requests],
        "max_query_len": max([n for _, _, n in requests] or [0]),
    }
