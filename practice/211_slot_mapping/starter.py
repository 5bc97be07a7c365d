"""Exercise 211: build one step's attention metadata from block tables. Keep the names."""
from __future__ import annotations


def build_step_metadata(requests: list[tuple[list[int], int, int]], block_size: int) -> dict:
    """requests: (block_table, num_computed, num_new) each. See problem.md for the returned keys."""
    slot_mapping: list[int] = []
    # TODO: validate each request, then append the slot of each new token
    # TODO: build query_start_loc, seq_lens, padded block_tables, max_query_len
    raise NotImplementedError("build_step_metadata")
