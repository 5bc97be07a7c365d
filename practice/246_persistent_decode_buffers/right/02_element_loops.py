# Correct: Writes element by element in Python loops (in place all the same), keeps the limits as attributes, and builds the metadata with narrow().
from __future__ import annotations

import torch

from mini_platform.model.paged_attention import AttentionMetadata


class InputBuffers:
    def __init__(self, max_num_tokens: int, max_num_seqs: int, max_blocks_per_seq: int, device="cpu") -> None:
        dev = torch.device(device)
        self.limits = {"max_num_tokens": max_num_tokens, "max_num_seqs": max_num_seqs,
                       "max_blocks_per_seq": max_blocks_per_seq}
        self.input_ids = torch.zeros(max_num_tokens, dtype=torch.int64, device=dev)
        self.positions = torch.zeros(max_num_tokens, dtype=torch.int64, device=dev)
        self.slot_mapping = torch.zeros(max_num_tokens, dtype=torch.int32, device=dev)
        self.slot_mapping.fill_(-1)
        self.block_tables = torch.zeros(max_num_seqs, max_blocks_per_seq, dtype=torch.int32, device=dev)
        self.seq_lens = torch.zeros(max_num_seqs, dtype=torch.int32, device=dev)
        self.query_start_loc = torch.zeros(max_num_seqs + 1, dtype=torch.int32, device=dev)

    def fill(self, input_ids, positions, slots, block_tables, seq_lens, query_lens) -> None:
        used = {"max_num_tokens": len(input_ids), "max_num_seqs": len(seq_lens),
                "max_blocks_per_seq": max([len(r) for r in block_tables], default=0)}
        for name, n in used.items():
            if n > self.limits[name]:
                raise ValueError(f"the step needs {n}, more than {name}={self.limits[name]}")
        for i in range(len(input_ids)):
            self.input_ids[i] = input_ids[i]
            self.positions[i] = positions[i]
            self.slot_mapping[i] = slots[i]
        total = 0
        self.query_start_loc[0] = 0
        width = used["max_blocks_per_seq"]
        for b, (row, n, q) in enumerate(zip(block_tables, seq_lens, query_lens)):
            self.seq_lens[b] = n
            total += q
            self.query_start_loc[b + 1] = total
            for j in range(width):
                self.block_tables[b, j] = row[j] if j < len(row) else 0

    def metadata(self, num_tokens: int, num_seqs: int, max_query_len: int) -> AttentionMetadata:
        return AttentionMetadata(slot_mapping=self.slot_mapping.narrow(0, 0, num_tokens),
                                 block_tables=self.block_tables.narrow(0, 0, num_seqs),
                                 query_start_loc=self.query_start_loc.narrow(0, 0, num_seqs + 1),
                                 seq_lens=self.seq_lens.narrow(0, 0, num_seqs), max_query_len=max_query_len)
