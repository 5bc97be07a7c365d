# Correct: Passes dataclasses.replace only the fields that change, so the result shares the unchanged sample_rows list with the step (neither is modified).
from __future__ import annotations

import dataclasses

from mini_platform.model_runner import StepInput


def pad_decode_step(step: StepInput, size: int) -> StepInput:
    b = len(step.seq_lens)
    if set(step.query_lens) - {1}:
        raise ValueError(f"not a decode step: query_lens={step.query_lens}")
    if size < b:
        raise ValueError(f"size {size} < {b} requests")
    n = size - b
    width = max((len(r) for r in step.block_tables), default=0)
    return dataclasses.replace(step, input_ids=[*step.input_ids, *[0] * n], positions=[*step.positions, *[0] * n],
                               slot_mapping=[*step.slot_mapping, *[-1] * n], seq_lens=[*step.seq_lens, *[0] * n],
                               query_lens=[*step.query_lens, *[1] * n],
                               block_tables=[*step.block_tables, *([0] * width for _ in range(n))], max_query_len=1)
