"""Exercise 234: tokens per expert and the padding cost of block-aligned grouped GEMMs. Keep the names."""
from __future__ import annotations


def expert_load(topk_ids: list[list[int]], num_experts: int, block_size: int) -> dict:
    """See problem.md for the six keys."""
    # TODO: validate; count each (token, choice), a repeated expert each time
    # TODO: round every count up to a multiple of block_size
    raise NotImplementedError("expert_load")
