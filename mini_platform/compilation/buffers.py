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
from array import array

import torch

from ..model.paged_attention import AttentionMetadata

PAD_SLOT_ID = -1


def host_tensor(values: list[int]) -> torch.Tensor:
    """An int64 CPU tensor of ``values``, made through an ``array``: ``torch.tensor`` on a list converts
    element by element, several times slower, and a step makes one of these every time."""
    return torch.frombuffer(array("q", values), dtype=torch.int64) if values else torch.zeros(0, dtype=torch.int64)


class InputBuffers:
    """``input_ids``/``positions`` (int64) and ``slot_mapping`` (int32) of ``max_num_tokens``;
    ``block_tables`` int32 ``[max_num_seqs, max_blocks_per_seq]``, ``seq_lens`` int32 ``[max_num_seqs]``
    and ``query_start_loc`` int32 ``[max_num_seqs + 1]``."""

    def __init__(self, max_num_tokens: int, max_num_seqs: int, max_blocks_per_seq: int,
                 device: str | torch.device = "cpu") -> None:
        def zeros(*shape: int, dtype: torch.dtype) -> torch.Tensor:
            return torch.zeros(*shape, dtype=dtype, device=device)

        self.input_ids = zeros(max_num_tokens, dtype=torch.long)
        self.positions = zeros(max_num_tokens, dtype=torch.long)
        self.slot_mapping = torch.full((max_num_tokens,), PAD_SLOT_ID, dtype=torch.int32, device=device)
        self.block_tables = zeros(max_num_seqs, max_blocks_per_seq, dtype=torch.int32)
        self.seq_lens = zeros(max_num_seqs, dtype=torch.int32)
        self.query_start_loc = zeros(max_num_seqs + 1, dtype=torch.int32)

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
        pad_t, pad_b = num_tokens - t, num_seqs - b
        rows = [row + [0] * (used - len(row)) for row in block_tables] + [[0] * used] * pad_b
        targets = [(self.input_ids[:num_tokens], input_ids + [0] * pad_t),
                   (self.positions[:num_tokens], positions + [0] * pad_t),
                   (self.slot_mapping[:num_tokens], slots + [PAD_SLOT_ID] * pad_t),
                   (self.seq_lens[:num_seqs], seq_lens + [0] * pad_b),
                   (self.query_start_loc[:num_seqs + 1], list(itertools.accumulate(query_lens + [1] * pad_b, initial=0))),
                   (self.block_tables[:num_seqs, :used], list(itertools.chain.from_iterable(rows)))]
        # Every value in one host tensor, then one copy per buffer.
        values = host_tensor(list(itertools.chain.from_iterable(v for _, v in targets)))
        for (buffer, _), chunk in zip(targets, values.split([len(v) for _, v in targets])):
            buffer.copy_(chunk.view(buffer.shape), non_blocking=True)

    def metadata(self, num_tokens: int, num_seqs: int, max_query_len: int) -> AttentionMetadata:
        """Views of the first ``num_tokens`` tokens and ``num_seqs`` requests."""
        return AttentionMetadata(slot_mapping=self.slot_mapping[:num_tokens], block_tables=self.block_tables[:num_seqs],
                                 query_start_loc=self.query_start_loc[:num_seqs + 1],
                                 seq_lens=self.seq_lens[:num_seqs], max_query_len=max_query_len)
