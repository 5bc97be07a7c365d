"""Exercise 214: paged decode attention with grouped-query heads. Keep the names."""
from __future__ import annotations

import torch


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """query [B, nh, hd]; caches [nb, bs, nkv, hd]; block_tables int32 [B, max_blocks]; seq_lens int32 [B].

    Read only the first seq_lens[b] slots of a sequence: the rest (unused columns, unwritten slots) may hold anything.
    """
    # TODO: validate; for each sequence gather its first seq_len tokens' K/V through the block table,
    #       map query heads to KV heads, softmax(scale * q k^T) v in fp32
    raise NotImplementedError("paged_decode_attention")
