# Correct: Writes by slice assignment, zeroes whole block-table rows out to max_blocks_per_seq, uses torch.cumsum, resets the unused slots to -1, and checks the width first.
from __future__ import annotations

import torch

from mini_platform.model.paged_attention import AttentionMetadata


class InputBuffers:
    def __init__(self, max_num_tokens, max_num_seqs, max_blocks_per_seq, device="cpu"):
        self.max_num_tokens, self.max_num_seqs, self.max_blocks_per_seq = max_num_tokens, max_num_seqs, max_blocks_per_seq
        self.input_ids = torch.zeros(max_num_tokens, dtype=torch.long, device=device)
        self.positions = torch.zeros_like(self.input_ids)
        self.slot_mapping = torch.full((max_num_tokens,), -1, dtype=torch.int32, device=device)
        self.block_tables = torch.zeros((max_num_seqs, max_blocks_per_seq), dtype=torch.int32, device=device)
        self.seq_lens = torch.zeros(max_num_seqs, dtype=torch.int32, device=device)
        self.query_start_loc = torch.zeros(max_num_seqs + 1, dtype=torch.int32, device=device)

    def fill(self, input_ids, positions, slots, block_tables, seq_lens, query_lens):
        for row in block_tables:
            if len(row) > self.max_blocks_per_seq:
                raise ValueError(f"block table of {len(row)} > max_blocks_per_seq {self.max_blocks_per_seq}")
        if len(seq_lens) > self.max_num_seqs:
            raise ValueError(f"{len(seq_lens)} requests > max_num_seqs {self.max_num_seqs}")
        if len(input_ids) > self.max_num_tokens:
            raise ValueError(f"{len(input_ids)} tokens > max_num_tokens {self.max_num_tokens}")
        t, b = len(input_ids), len(seq_lens)
        self.input_ids[:t] = torch.tensor(input_ids, dtype=torch.long)
        self.positions[:t] = torch.tensor(positions, dtype=torch.long)
        self.slot_mapping[:t] = torch.tensor(slots, dtype=torch.int32)
        self.slot_mapping[t:] = -1
        self.seq_lens[:b] = torch.tensor(seq_lens, dtype=torch.int32)
        self.query_start_loc[0] = 0
        if b:
            self.query_start_loc[1:b + 1] = torch.cumsum(torch.tensor(query_lens, dtype=torch.int32), 0)
            rows = [list(r) + [0] * (self.max_blocks_per_seq - len(r)) for r in block_tables]
            self.block_tables[:b] = torch.tensor(rows, dtype=torch.int32)

    def metadata(self, num_tokens, num_seqs, max_query_len):
        return AttentionMetadata(slot_mapping=self.slot_mapping[:num_tokens], block_tables=self.block_tables[:num_seqs],
                                 query_start_loc=self.query_start_loc[:num_seqs + 1],
                                 seq_lens=self.seq_lens[:num_seqs], max_query_len=max_query_len)
