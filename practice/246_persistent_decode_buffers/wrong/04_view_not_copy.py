# Mistake: The learner returns a view of the graph's static output, which the next replay overwrites.
from __future__ import annotations

from typing import Callable

import torch

DecodeRequest = tuple[int, int, int, list[int]]  # (token_id, position, slot, block_table)


class DecodeBuffers:
    def __init__(self, max_size: int, max_blocks: int) -> None:
        self.max_size = max_size
        self.input_ids = torch.zeros(max_size, dtype=torch.int64)
        self.positions = torch.zeros(max_size, dtype=torch.int64)
        self.slot_mapping = torch.zeros(max_size, dtype=torch.int32)
        self.seq_lens = torch.zeros(max_size, dtype=torch.int32)
        self.block_tables = torch.zeros(max_size, max_blocks, dtype=torch.int32)

    def fill(self, batch: list[DecodeRequest], padded_size: int) -> None:
        n = len(batch)
        if n > padded_size or padded_size > self.max_size:
            raise ValueError(f"need len(batch)={n} <= padded_size={padded_size} <= max_size={self.max_size}")
        tokens = [request[0] for request in batch]
        positions = [request[1] for request in batch]
        slots = [request[2] for request in batch]
        self.input_ids[:n].copy_(torch.tensor(tokens, dtype=torch.int64))
        self.positions[:n].copy_(torch.tensor(positions, dtype=torch.int64))
        self.slot_mapping[:n].copy_(torch.tensor(slots, dtype=torch.int32))
        self.seq_lens[:n].copy_(torch.tensor(positions, dtype=torch.int32) + 1)
        self.block_tables[:padded_size].zero_()
        for row, (*_, table) in enumerate(batch):
            self.block_tables[row, :len(table)] = torch.tensor(table, dtype=torch.int32)
        self.input_ids[n:padded_size] = 0
        self.positions[n:padded_size] = 0
        self.slot_mapping[n:padded_size] = -1
        self.seq_lens[n:padded_size] = 0


def run_decode(buffers: DecodeBuffers, graphs: dict[int, Callable[[], torch.Tensor]],
               batch: list[DecodeRequest]) -> torch.Tensor:
    fitting = [size for size in graphs if size >= len(batch)]
    if not fitting:
        raise ValueError(f"no captured graph holds {len(batch)} requests (sizes {sorted(graphs)})")
    size = min(fitting)
    buffers.fill(batch, size)
    return graphs[size]()[:len(batch)]
