"""Exercise 217: paged attention for a mixed batch (causal, bottom-right aligned). Keep the names."""
from __future__ import annotations

import torch


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, query_start_loc: torch.Tensor, seq_lens: torch.Tensor,
                    scale: float) -> torch.Tensor:
    """query [T, nh, hd]; caches [nb, bs, nkv, hd]; request b owns rows query_start_loc[b]:query_start_loc[b+1].

    Read only the first seq_lens[b] slots of a request: the rest (unused columns, unwritten slots) may hold anything.
    """
    # TODO: for each request: gather its seq_len K/V through the block table, map heads (GQA),
    #       mask key positions after each query's own position, softmax in fp32
    raise NotImplementedError("paged_attention")
