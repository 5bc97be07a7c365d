# Mistake: Tells a decode step by sum(query_lens) == len(query_lens), so query_lens [2, 0] passes as two decodes.
from __future__ import annotations

import dataclasses

from mini_platform.model_runner import StepInput


def pad_decode_step(step: StepInput, size: int) -> StepInput:
    num_seqs = len(step.seq_lens)
    if sum(step.query_lens) != len(step.query_lens):
        raise ValueError(f"only a decode step is padded for a graph, got query_lens {step.query_lens}")
    if num_seqs > size:
        raise ValueError(f"{num_seqs} requests do not fit a graph of size {size}")
    pad = size - num_seqs
    width = max((len(row) for row in step.block_tables), default=0)
    return dataclasses.replace(
        step,
        input_ids=step.input_ids + [0] * pad,
        positions=step.positions + [0] * pad,
        slot_mapping=step.slot_mapping + [-1] * pad,
        block_tables=step.block_tables + [[0] * width for _ in range(pad)],
        seq_lens=step.seq_lens + [0] * pad,
        query_lens=step.query_lens + [1] * pad,
        sample_rows=list(step.sample_rows),
        max_query_len=1,
    )
