# Correct: Keeps a running row offset and computes each sampling row as offset + num_new - 1.
"""Exercise 225: lay one scheduled step out as one token sequence."""
from __future__ import annotations


def prepare_inputs(scheduled: list[tuple[list[int], int, int]]) -> dict:
    input_ids, positions, logits_indices = [], [], []
    for i, (token_ids, start, num_new) in enumerate(scheduled):
        if start < 0 or num_new < 1 or start + num_new > len(token_ids):
            raise ValueError(f"request {i}: positions {start}..{start + num_new - 1} are not within its "
                             f"{len(token_ids)} tokens")
        offset = len(input_ids)
        input_ids.extend(token_ids[start:start + num_new])
        positions.extend(list(range(start, start + num_new)))
        if start + num_new == len(token_ids):
            logits_indices.append(offset + num_new - 1)
    return {"input_ids": input_ids, "positions": positions, "logits_indices": logits_indices}
