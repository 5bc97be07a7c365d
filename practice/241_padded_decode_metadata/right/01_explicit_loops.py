# Correct: Builds a new StepInput field by field with loops, takes the width from the first row (rows are already padded to the widest), checks the size before the decode rule.
from __future__ import annotations

from mini_platform.model_runner import StepInput


def pad_decode_step(step: StepInput, size: int) -> StepInput:
    b = len(step.query_lens)
    if b > size:
        raise ValueError(f"step has {b} requests but the graph holds {size}")
    for q in step.query_lens:
        if q != 1:
            raise ValueError("pad_decode_step: not a decode step")
    width = len(step.block_tables[0]) if step.block_tables else 0
    input_ids, positions, slots = list(step.input_ids), list(step.positions), list(step.slot_mapping)
    tables = [list(row) for row in step.block_tables]
    seq_lens, query_lens = list(step.seq_lens), list(step.query_lens)
    for _ in range(size - b):
        input_ids.append(0)
        positions.append(0)
        slots.append(-1)
        tables.append([0] * width)
        seq_lens.append(0)
        query_lens.append(1)
    return StepInput(input_ids=input_ids, positions=positions, slot_mapping=slots, block_tables=tables,
                     seq_lens=seq_lens, query_lens=query_lens, sample_rows=step.sample_rows[:], max_query_len=1)
