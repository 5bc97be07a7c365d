# Correct: Deep-copies the step and extends the copy's lists in place; counts requests from input_ids (a decode step has one token each).
from __future__ import annotations

import copy

from mini_platform.model_runner import StepInput


def pad_decode_step(step: StepInput, size: int) -> StepInput:
    if not all(q == 1 for q in step.query_lens):
        raise ValueError(f"query_lens {step.query_lens}: only decode steps (all 1) can be padded")
    out = copy.deepcopy(step)
    pad = size - len(out.input_ids)
    if pad < 0:
        raise ValueError(f"too many requests ({len(out.input_ids)}) for size {size}")
    width = max([len(r) for r in out.block_tables] + [0])
    out.input_ids.extend([0] * pad)
    out.positions.extend([0] * pad)
    out.slot_mapping.extend([-1] * pad)
    out.seq_lens.extend([0] * pad)
    out.query_lens.extend([1] * pad)
    out.block_tables.extend([0] * width for _ in range(pad))
    out.max_query_len = 1
    return out
