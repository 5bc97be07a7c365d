"""Exercise 241: padding the inputs of a decode batch. Keep the names."""
from __future__ import annotations

DecodeRequest = tuple[int, int, list[int]]  # (token_id, position, block_table)


def pad_decode_metadata(requests: list[DecodeRequest], padded_size: int, block_size: int,
                        max_blocks: int) -> dict[str, list]:
    # TODO 1: check the batch (not empty, fits padded_size, tables fit max_blocks, positions inside their tables)
    # TODO 2: the real rows: ids, positions, slots, seq_lens, block tables padded to max_blocks
    # TODO 3: the padding rows: 0, 0, -1, 0, a row of zeros; query_start_loc repeats its last value
    raise NotImplementedError("pad_decode_metadata")
