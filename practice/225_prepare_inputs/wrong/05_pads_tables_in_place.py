# Mistake: Pads the caller's block tables in place.
"""Exercise 225: pack one scheduled step into model-runner tensors."""
from __future__ import annotations

import torch


def prepare_inputs(scheduled: list[tuple[list[int], int, int, list[int]]], block_size: int) -> dict[str, torch.Tensor]:
    input_ids, positions, slots, starts, seq_lens, logits_indices = [], [], [], [0], [], []
    for token_ids, start, num_new, table in scheduled:
        end = start + num_new
        input_ids += token_ids[start:end]
        positions += range(start, end)
        slots += [table[p // block_size] * block_size + p % block_size for p in range(start, end)]
        starts.append(starts[-1] + num_new)
        seq_lens.append(end)
        if end == len(token_ids):
            logits_indices.append(starts[-1] - 1)
    width = max((len(t) for *_, t in scheduled), default=0)
    tables = [t.extend([0] * (width - len(t))) or t for *_, t in scheduled]
    return {
        "input_ids": torch.tensor(input_ids, dtype=torch.int64),
        "positions": torch.tensor(positions, dtype=torch.int64),
        "slot_mapping": torch.tensor(slots, dtype=torch.int32),
        "query_start_loc": torch.tensor(starts, dtype=torch.int32),
        "seq_lens": torch.tensor(seq_lens, dtype=torch.int32),
        "block_tables": torch.tensor(tables, dtype=torch.int32).reshape(len(scheduled), width),
        "logits_indices": torch.tensor(logits_indices, dtype=torch.int64),
    }
