# Mistake: Rejects num_new == 0 but not a negative num_new, so a request asking for -1 tokens is silently given none.
"""Exercise 225: lay one scheduled step out as one token sequence."""
from __future__ import annotations


def prepare_inputs(scheduled: list[tuple[list[int], int, int]]) -> dict:
    input_ids, positions, logits_indices = [], [], []
    for i, (token_ids, start, num_new) in enumerate(scheduled):
        if start < 0 or num_new == 0 or start + num_new > len(token_ids):
            raise ValueError(f"request {i}: positions {start}..{start + num_new - 1} are not within its "
                             f"{len(token_ids)} tokens")
        input_ids += token_ids[start:start + num_new]
        positions += range(start, start + num_new)
        if start + num_new == len(token_ids):
            logits_indices.append(len(input_ids) - 1)
    return {"input_ids": input_ids, "positions": positions, "logits_indices": logits_indices}
