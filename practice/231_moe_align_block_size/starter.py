"""Exercise 231: vLLM's moe_align_block_size in plain Python. Keep the names."""
from __future__ import annotations


def moe_align_block_size(topk_ids: list[list[int]], block_size: int, num_experts: int,
                         expert_map: list[int] | None = None) -> tuple[list[int], list[int], int]:
    """Return (sorted_token_ids, expert_ids, num_tokens_post_padded); see problem.md."""
    # TODO: validate; numel = M * top_k; the flat index of (t, j) is t * top_k + j
    # TODO: group flat indices by expert; pad each non-empty run with the sentinel numel to a multiple of block_size
    # TODO: buffer of numel + num_experts * (block_size - 1) sentinels; expert_ids with 0 for unused blocks
    # TODO: map every expert_ids entry through expert_map when given
    raise NotImplementedError("moe_align_block_size")
