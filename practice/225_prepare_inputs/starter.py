"""Exercise 225: pack one scheduled step into model-runner tensors. Keep the names."""
from __future__ import annotations

import torch


def prepare_inputs(scheduled: list[tuple[list[int], int, int, list[int]]], block_size: int) -> dict[str, torch.Tensor]:
    # TODO: build input_ids, positions, slot_mapping, query_start_loc, seq_lens, block_tables
    #       and logits_indices with the dtypes of the statement
    raise NotImplementedError("prepare_inputs")
