"""Exercise 241: pad a decode step up to a capture size. Keep the names."""
from __future__ import annotations

import dataclasses  # noqa: F401  (dataclasses.replace builds the new StepInput)

from mini_platform.model_runner import StepInput


def pad_decode_step(step: StepInput, size: int) -> StepInput:
    # TODO 1: ValueError unless every query_lens entry is 1 and len(step.seq_lens) <= size
    # TODO 2: append size - B padding requests: token 0, position 0, slot -1, seq_len 0, query_len 1,
    #         a block-table row of zeros as wide as the widest real row (each its own list)
    # TODO 3: sample_rows unchanged, max_query_len 1; a new StepInput, step itself untouched
    raise NotImplementedError("pad_decode_step")
