"""Persistent input buffers: allocated once, filled in place and sliced every step (exercise 246).

A captured graph reads its inputs from fixed addresses, so the model runner never builds new input
tensors: it copies each step's values into these buffers and hands the model slices of them
(``input_ids[:num_tokens]``), as vLLM's GPU model runner does. A graph step arrives here already padded
to its capture size (``mini_platform.model_runner.pad_decode_step``). Block-table columns past the step's
widest row keep earlier values: valid block ids, never read unmasked.
"""
from __future__ import annotations

import itertools

import numpy
import torch

from ..model.paged_attention import AttentionMetadata

PAD_SLOT_ID = -1


class InputBuffers:
    """``input_ids``/``positions`` (int64) and ``slot_mapping`` (int32, -1 until written) of ``max_num_tokens``;
    ``block_tables`` int32 ``[max_num_seqs, max_blocks_per_seq]``, ``seq_lens`` int32 ``[max_num_seqs]``
    and ``query_start_loc`` int32 ``[max_num_seqs + 1]``.

    Values are written on the host through numpy views of CPU tensors, one fast conversion per list (the V1
    engine of vLLM v0.11.0 pairs CPU and device buffers the same way: ``CpuGpuBuffer.np`` in ``vllm/v1/utils.py``).
    On the CPU those tensors are the buffers; on another device each step copies the part it filled across."""

    FIELDS = ("input_ids", "positions", "slot_mapping", "block_tables", "seq_lens", "query_start_loc")

    def __init__(self, max_num_tokens: int, max_num_seqs: int, max_blocks_per_seq: int,
                 device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        shapes = ((max_num_tokens,), (max_num_tokens,), (max_num_tokens,), (max_num_seqs, max_blocks_per_seq),
                  (max_num_seqs,), (max_num_seqs + 1,))
        dtypes = (torch.long, torch.long, torch.int32, torch.int32, torch.int32, torch.int32)
        self.host = {name: torch.zeros(shape, dtype=dtype) for name, shape, dtype in zip(self.FIELDS, shapes, dtypes)}
        self.host["slot_mapping"].fill_(PAD_SLOT_ID)
        self._np = {name: t.numpy() for name, t in self.host.items()}
        for name, t in self.host.items():
            setattr(self, name, t if self.device.type == "cpu" else t.to(self.device))

    def fill(self, input_ids: list[int], positions: list[int], slots: list[int], block_tables: list[list[int]],
             seq_lens: list[int], query_lens: list[int]) -> None:
        """Copy one step's values into the first rows, in place: its tokens (ids, positions, slots), its requests
        (seq_lens, block tables padded with 0 to the step's widest row) and ``query_start_loc``, the running sum
        of ``query_lens`` from 0. ValueError when the step does not fit."""
        t, b = len(input_ids), len(seq_lens)
        width = self.block_tables.shape[1]
        if t > self.input_ids.shape[0] or b > self.seq_lens.shape[0]:
            raise ValueError(f"a step of {t} tokens and {b} requests does not fit the buffers "
                             f"(max_num_tokens={self.input_ids.shape[0]}, max_num_seqs={self.seq_lens.shape[0]})")
        used = max(map(len, block_tables), default=0)  # O(B x widest row), not O(B x max_blocks_per_seq)
        if used > width:
            raise ValueError(f"a block table has {used} blocks, more than max_blocks_per_seq={width}")
        np = self._np
        np["input_ids"][:t] = input_ids
        np["positions"][:t] = positions
        np["slot_mapping"][:t] = slots
        np["seq_lens"][:b] = seq_lens
        np["query_start_loc"][:b + 1] = list(itertools.accumulate(query_lens, initial=0))
        if used:   # one flat pass: a third cheaper than numpy converting a list of lists row by row
            padded = (row if len(row) == used else [*row, *[0] * (used - len(row))] for row in block_tables)
            np["block_tables"][:b, :used] = numpy.fromiter(itertools.chain.from_iterable(padded), numpy.int32,
                                                           b * used).reshape(b, used)
        if self.device.type != "cpu":
            for name, rows in zip(self.FIELDS, (t, t, t, b, b, b + 1)):
                part = (slice(rows), slice(used)) if name == "block_tables" else slice(rows)
                getattr(self, name)[part].copy_(self.host[name][part], non_blocking=True)

    def metadata(self, num_tokens: int, num_seqs: int, max_query_len: int) -> AttentionMetadata:
        """Views of the first ``num_tokens`` tokens and ``num_seqs`` requests."""
        return AttentionMetadata(slot_mapping=self.slot_mapping[:num_tokens], block_tables=self.block_tables[:num_seqs],
                                 query_start_loc=self.query_start_loc[:num_seqs + 1],
                                 seq_lens=self.seq_lens[:num_seqs], max_query_len=max_query_len)
