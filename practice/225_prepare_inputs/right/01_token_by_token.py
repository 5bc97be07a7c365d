# Correct: Builds the lists token by token, validating every request before laying out any, with its own error wording.
"""Exercise 225: lay one scheduled step out as one token sequence."""
from __future__ import annotations


def prepare_inputs(scheduled: list[tuple[list[int], int, int]]) -> dict:
    for token_ids, start, num_new in scheduled:
        if not (0 <= start and 1 <= num_new and start + num_new <= len(token_ids)):
            raise ValueError(f"bad window start={start}, num_new={num_new} for {len(token_ids)} tokens")
    input_ids, positions, logits_indices = [], [], []
    for token_ids, start, num_new in scheduled:
        for pos in range(start, start + num_new):
            input_ids.append(token_ids[pos])
            positions.append(pos)
        if start + num_new == len(token_ids):
            logits_indices.append(len(input_ids) - 1)
    return {"input_ids": input_ids, "positions": positions, "logits_indices": logits_indices}
