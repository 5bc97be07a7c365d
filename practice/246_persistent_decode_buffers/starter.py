"""Exercise 246: persistent input buffers, filled in place. Keep the names."""
from __future__ import annotations

import itertools  # noqa: F401  (itertools.accumulate gives query_start_loc)

import torch

from mini_platform.model.paged_attention import AttentionMetadata


class InputBuffers:
    def __init__(self, max_num_tokens: int, max_num_seqs: int, max_blocks_per_seq: int,
                 device: str | torch.device = "cpu") -> None:
        # TODO 1: allocate once on device: input_ids, positions (int64, zeros), slot_mapping (int32, -1)
        #         [max_num_tokens]; block_tables (int32) [max_num_seqs, max_blocks_per_seq]; seq_lens (int32)
        #         [max_num_seqs]; query_start_loc (int32) [max_num_seqs + 1]
        raise NotImplementedError("InputBuffers.__init__")

    def fill(self, input_ids: list[int], positions: list[int], slots: list[int], block_tables: list[list[int]],
             seq_lens: list[int], query_lens: list[int]) -> None:
        # TODO 2: check the limits (name the one exceeded); write the first rows IN PLACE (copy_, never assign);
        #         query_start_loc = [0, q0, q0 + q1, ...]; block-table rows padded with 0 to the widest row
        raise NotImplementedError("InputBuffers.fill")

    def metadata(self, num_tokens: int, num_seqs: int, max_query_len: int) -> AttentionMetadata:
        # TODO 3: views (slices) of the first num_tokens tokens and num_seqs requests
        raise NotImplementedError("InputBuffers.metadata")
