# Mistake: Rejects num_new == 0 but lets a negative num_new through (the statement asks for num_new >= 1).
"""Exercise 211: build one step's attention metadata from block tables (solution)."""
from __future__ import annotations


def build_step_metadata(requests: list[tuple[list[int], int, int]], block_size: int) -> dict:
    slot_mapping, query_start_loc, seq_lens = [], [0], []
    for i, (table, computed, new) in enumerate(requests):
        if computed < 0 or new == 0:
            raise ValueError(f"request {i}: need num_computed >= 0 and num_new >= 1, got {computed}, {new}")
        if computed + new > len(table) * block_size:
            raise ValueError(f"request {i}: {len(table)} blocks of {block_size} cannot hold {computed + new} tokens")
        slot_mapping += [table[p // block_size] * block_size + p % block_size for p in range(computed, computed + new)]
        query_start_loc.append(query_start_loc[-1] + new)
        seq_lens.append(computed + new)
    width = max((len(t) for t, _, _ in requests), default=0)
    return {"slot_mapping": slot_mapping, "query_start_loc": query_start_loc, "seq_lens": seq_lens,
            "block_tables": [list(t) + [0] * (width - len(t)) for t, _, _ in requests],
            "max_query_len": max((n for _, _, n in requests), default=0)}
