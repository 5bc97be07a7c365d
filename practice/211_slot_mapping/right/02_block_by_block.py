# Correct: walks each request's new tokens block by block (the first block from its current offset), pads the tables in a second loop over copies, and handles the empty batch with an early return.
from __future__ import annotations


def build_step_metadata(requests, block_size):
    if not requests:
        return {"slot_mapping": [], "query_start_loc": [0], "seq_lens": [], "block_tables": [], "max_query_len": 0}
    slots, starts, lens = [], [0], []
    for number, (table, done, new) in enumerate(requests):
        if done < 0:
            raise ValueError(f"request #{number}: num_computed must not be negative")
        if new <= 0:
            raise ValueError(f"request #{number}: num_new must be positive")
        end = done + new
        if end > block_size * len(table):
            raise ValueError(f"request #{number}: needs {-(-end // block_size)} blocks, has {len(table)}")
        p = done
        while p < end:
            block, offset = table[p // block_size], p % block_size
            run = min(block_size - offset, end - p)
            slots.extend(range(block * block_size + offset, block * block_size + offset + run))
            p += run
        starts.append(starts[-1] + new)
        lens.append(end)
    width = max(len(t) for t, _, _ in requests)
    tables = []
    for table, _, _ in requests:
        row = list(table)
        while len(row) < width:
            row.append(0)
        tables.append(row)
    return {"slot_mapping": slots, "query_start_loc": starts, "seq_lens": lens, "block_tables": tables,
            "max_query_len": max(n for _, _, n in requests)}
