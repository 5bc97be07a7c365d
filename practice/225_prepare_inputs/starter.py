"""Exercise 225: lay one scheduled step out as one token sequence. Keep the names."""
from __future__ import annotations


def prepare_inputs(scheduled: list[tuple[list[int], int, int]]) -> dict:
    # TODO: check each request, then build input_ids, positions and logits_indices
    raise NotImplementedError("prepare_inputs")
