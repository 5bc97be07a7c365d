"""Exercise 204: grouped-query attention over a contiguous KV cache.

Fill in the TODOs.
"""
from __future__ import annotations

import torch


def gqa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int) -> torch.Tensor:
    """q [T, nh, hd]; k, v [L, nkv, hd]; query i at position offset + i sees keys 0 .. offset + i.
    Head h reads kv head h // (nh // nkv). Scale hd ** -0.5, softmax in float32, q's dtype out."""
    raise NotImplementedError("TODO: implement gqa_attention")


class KVCache:
    """One layer's contiguous K/V storage for one sequence."""

    def __init__(self, max_len: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype = torch.float32) -> None:
        self.length = 0
        # TODO: allocate the key and value tensors [max_len, num_kv_heads, head_dim]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k, v [T, nkv, hd] after the stored tokens; return all keys and values so far."""
        raise NotImplementedError("TODO: implement KVCache.append")


def attention_step(cache: KVCache, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Append this step's k, v to the cache, then attend causally from q over the whole cache."""
    raise NotImplementedError("TODO: implement attention_step")
