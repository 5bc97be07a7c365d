# Mistake: Uses >= in the capacity check, so a sequence that exactly fills its block-table row is rejected.
"""Exercise 214: paged decode attention with grouped-query heads."""
from __future__ import annotations

import torch


def paged_decode_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    num_heads, num_kv_heads, block_size = query.shape[1], key_cache.shape[2], key_cache.shape[1]
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads {num_heads} is not a multiple of num_kv_heads {num_kv_heads}")
    out = torch.empty_like(query)
    for b, n in enumerate(seq_lens.tolist()):
        if n >= block_tables.shape[1] * block_size:
            raise ValueError(f"sequence {b}: {n} tokens do not fit in {block_tables.shape[1]} blocks")
        blocks = block_tables[b, :-(-n // block_size)].long()
        k = key_cache[blocks].flatten(0, 1)[:n].float()                     # [n, nkv, hd]
        v = value_cache[blocks].flatten(0, 1)[:n].float()
        group = num_heads // num_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)   # [n, nh, hd]
        weights = torch.einsum("hd,nhd->hn", query[b].float(), k).mul(scale).softmax(dim=-1)
        out[b] = torch.einsum("hn,nhd->hd", weights, v).to(query.dtype)
    return out
