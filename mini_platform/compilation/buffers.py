"""Persistent input buffers: allocated once, filled in place and sliced every step.

A captured graph reads its inputs from fixed addresses, so the model runner never builds new input
tensors: it copies each step's values into these buffers and hands the model slices of them
(``input_ids[:num_tokens]``), as vLLM's GPU model runner does. A step padded up to a capture size
gets padding after its real rows: token 0 at position 0 with slot -1 (its K/V is never written),
and requests of length 0 with one padding token each and an all-zero block table row. Block-table
columns past the step's longest row keep earlier values: valid block ids, never read unmasked.
"""
from __future__ import annotations

import itertools

import torch

from ..model.paged_attention import AttentionMetadata

PAD_SLOT_ID = -1


class InputBuffers:
    """``input_ids``/``positions`` (int64) and ``slot_mapping`` (int32) of ``max_num_tokens``;
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
             seq_lens: list[int], query_lens: list[int], num_tokens: int | None = None,
             num_seqs: int | None = None) -> None:
        """Copy one step's values in, padded up to ``num_tokens`` tokens and ``num_seqs`` requests
        (default: no padding). Padding tokens come after the real ones; padding requests have one token each."""
        t, b = len(input_ids), len(seq_lens)
        num_tokens, num_seqs = num_tokens or t, num_seqs or b
        width = self.block_tables.shape[1]
        if num_tokens > self.input_ids.shape[0] or num_seqs > self.seq_lens.shape[0]:
            raise ValueError(f"a step of {num_tokens} tokens and {num_seqs} requests does not fit the buffers "
                             f"({self.input_ids.shape[0]} tokens, {self.seq_lens.shape[0]} requests)")
        if num_tokens - t != num_seqs - b or num_tokens < t:
            raise ValueError(f"padding must add one token per padding request: {t} -> {num_tokens} tokens, "
                             f"{b} -> {num_seqs} requests")
        used = max(map(len, block_tables), default=1)  # O(B x longest row), not O(B x max_blocks_per_seq)
        if used > width:
            raise ValueError(f"a block table has more than max_blocks_per_seq={width} blocks")
        np = self._np
        for name, values, pad in (("input_ids", input_ids, 0), ("positions", positions, 0),
                                  ("slot_mapping", slots, PAD_SLOT_ID)):
            np[name][:t] = values
            np[name][t:num_tokens] = pad
        np["seq_lens"][:b] = seq_lens
        np["seq_lens"][b:num_seqs] = 0
        np["query_start_loc"][:num_seqs + 1] = list(itertools.accumulate(query_lens + [1] * (num_seqs - b), initial=0))
        if b:
            np["block_tables"][:b, :used] = [row + [0] * (used - len(row)) for row in block_tables]
        np["block_tables"][b:num_seqs, :used] = 0
        if self.device.type != "cpu":
            for name, rows in zip(self.FIELDS, (num_tokens, num_tokens, num_tokens, num_seqs, num_seqs, num_seqs + 1)):
                part = (slice(rows), slice(used)) if name == "block_tables" else slice(rows)
                getattr(self, name)[part].copy_(self.host[name][part], non_blocking=True)

    def metadata(self, num_tokens: int, num_seqs: int, max_query_len: int) -> AttentionMetadata:
        """Views of the first ``num_tokens`` tokens and ``num_seqs`` requests."""
        return AttentionMetadata(slot_mapping=self.slot_mapping[:num_tokens], block_tables=self.block_tables[:num_seqs],
                                 query_start_loc=self.query_start_loc[:num_seqs + 1],
                                 seq_lens=self.seq_lens[:num_seqs], max_query_len=max_query_len)
