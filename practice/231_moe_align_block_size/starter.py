"""Exercise 231: vLLM's moe_align_block_size, the Triton backend's. Keep the names."""
from __future__ import annotations

import torch


def moe_align_block_size(topk_ids: torch.Tensor, block_size: int, num_experts: int,
                         expert_map: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return int32 (sorted_token_ids, expert_ids, num_tokens_post_padded [1]); see problem.md."""
    # TODO: validate block_size and the expert_map's shape (with no tokens too)
    # TODO: numel = M * top_k; the flat index of (t, j) is t * top_k + j
    # TODO: group flat indices by expert (ascending); pad each non-empty run with the sentinel numel to whole blocks
    # TODO: a buffer of numel + num_experts * (block_size - 1) entries; expert_ids with 0 for unused blocks
    # TODO: map every expert_ids entry through expert_map when given
    raise NotImplementedError("moe_align_block_size")
