# Mistake: Pads the per-request lists only; input_ids, positions and slot_mapping keep B entries.
from __future__ import annotations

import dataclasses

from mini_platform.model_runner import StepInput


def pad_decode_step(step: StepInput, size: int) -> StepInput:
    num_seqs = len(step.seq_lens)
    if any(n != 1 for n in step.query_lens):
        raise ValueError(f"only a decode step is padded for a graph, got query_lens {step.query_lens}")
    if num_seqs > size:
        raise ValueError(f"{num_seqs} requests do not fit a graph of size {size}")
    pad = size - num_seqs
    width = max((len(row) for row in step.block_tables), default=0)
    return dataclasses.replace(
        step,
        input_ids=list(step.input_ids),
        positions=list(step.positions),
        slot_mapping=list(step.slot_mapping),
        block_tables=step.block_tables + [[0] * width for _ in range(pad)],
        seq_lens=step.seq_lens + [0] * pad,
        query_lens=step.query_lens + [1] * pad,
        sample_rows=list(step.sample_rows),
        max_query_len=1,
    )
