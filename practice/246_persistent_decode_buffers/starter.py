"""Exercise 246: persistent input buffers for decode graphs. Keep the names."""
from __future__ import annotations

from typing import Callable

import torch

DecodeRequest = tuple[int, int, int, list[int]]  # (token_id, position, slot, block_table)


class DecodeBuffers:
    def __init__(self, max_size: int, max_blocks: int) -> None:
        self.max_size = max_size
        # TODO 1: allocate input_ids, positions (int64), slot_mapping, seq_lens (int32) [max_size]
        #         and block_tables (int32) [max_size, max_blocks], all zeros, once

    def fill(self, batch: list[DecodeRequest], padded_size: int) -> None:
        # TODO 2: write the real rows and the padding rows in place (never assign new tensors)
        raise NotImplementedError("DecodeBuffers.fill")


def run_decode(buffers: DecodeBuffers, graphs: dict[int, Callable[[], torch.Tensor]],
               batch: list[DecodeRequest]) -> torch.Tensor:
    # TODO 3: smallest captured size >= len(batch); fill; replay; a copy of the real rows
    raise NotImplementedError("run_decode")
