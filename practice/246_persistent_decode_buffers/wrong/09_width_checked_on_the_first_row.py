# Mistake: Checks only the first block-table row against max_blocks_per_seq, so a wider later row gets past the check.
from __future__ import annotations

import itertools

import torch

from mini_platform.model.paged_attention import AttentionMetadata


class InputBuffers:
    def __init__(self, max_num_tokens: int, max_num_seqs: int, max_blocks_per_seq: int,
                 device: str | torch.device = "cpu") -> None:
        self.device = torch.device(device)
        self.input_ids = torch.zeros(max_num_tokens, dtype=torch.int64, device=self.device)
        self.positions = torch.zeros(max_num_tokens, dtype=torch.int64, device=self.device)
        self.slot_mapping = torch.full((max_num_tokens,), -1, dtype=torch.int32, device=self.device)
        self.block_tables = torch.zeros(max_num_seqs, max_blocks_per_seq, dtype=torch.int32, device=self.device)
        self.seq_lens = torch.zeros(max_num_seqs, dtype=torch.int32, device=self.device)
        self.query_start_loc = torch.zeros(max_num_seqs + 1, dtype=torch.int32, device=self.device)

    def _write(self, target: torch.Tensor, values: list) -> None:
        target.copy_(torch.tensor(values, dtype=target.dtype).reshape(target.shape))

    def fill(self, input_ids: list[int], positions: list[int], slots: list[int], block_tables: list[list[int]],
             seq_lens: list[int], query_lens: list[int]) -> None:
        t, b = len(input_ids), len(seq_lens)
        if t > self.input_ids.shape[0]:
            raise ValueError(f"{t} tokens exceed max_num_tokens={self.input_ids.shape[0]}")
        if b > self.seq_lens.shape[0]:
            raise ValueError(f"{b} requests exceed max_num_seqs={self.seq_lens.shape[0]}")
        width = max((len(row) for row in block_tables), default=0)
        if block_tables and len(block_tables[0]) > self.block_tables.shape[1]:
            raise ValueError(f"a block table of {width} blocks exceeds max_blocks_per_seq={self.block_tables.shape[1]}")
        self._write(self.input_ids[:t], input_ids)
        self._write(self.positions[:t], positions)
        self._write(self.slot_mapping[:t], slots)
        self._write(self.seq_lens[:b], seq_lens)
        self._write(self.query_start_loc[:b + 1], list(itertools.accumulate(query_lens, initial=0)))
        if width:
            self._write(self.block_tables[:b, :width], [row + [0] * (width - len(row)) for row in block_tables])

    def metadata(self, num_tokens: int, num_seqs: int, max_query_len: int) -> AttentionMetadata:
        return AttentionMetadata(slot_mapping=self.slot_mapping[:num_tokens], block_tables=self.block_tables[:num_seqs],
                                 query_start_loc=self.query_start_loc[:num_seqs + 1],
                                 seq_lens=self.seq_lens[:num_seqs], max_query_len=max_query_len)
