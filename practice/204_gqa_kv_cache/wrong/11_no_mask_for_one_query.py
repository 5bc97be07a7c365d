# Mistake: Skips the causal mask for a single query (a decode step), so a lone query at position offset also sees keys after it.
"""Exercise 204 (reference): grouped-query attention over a contiguous KV cache."""
from __future__ import annotations

import torch


def gqa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int) -> torch.Tensor:
    """q [T, nh, hd]; k, v [L, nkv, hd]; query i at position offset + i sees keys 0 .. offset + i."""
    t, nh, hd = q.shape
    if nh % k.shape[1]:
        raise ValueError(f"{nh} query heads are not a multiple of {k.shape[1]} KV heads")
    group = nh // k.shape[1]
    k = k.repeat_interleave(group, dim=1).transpose(0, 1)          # [nh, L, hd]
    v = v.repeat_interleave(group, dim=1).transpose(0, 1)
    scores = (q.transpose(0, 1).float() @ k.float().transpose(1, 2)) * hd ** -0.5   # [nh, T, L]
    visible = torch.arange(k.shape[1])[None, :] <= torch.arange(offset, offset + t)[:, None]
    probs = torch.softmax(scores if t == 1 else scores.masked_fill(~visible, float("-inf")), dim=-1)
    return (probs @ v.float()).transpose(0, 1).to(q.dtype)


class KVCache:
    """One layer's contiguous K/V storage for one sequence."""

    def __init__(self, max_len: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype = torch.float32) -> None:
        self.length = 0
        self.keys = torch.zeros(max_len, num_kv_heads, head_dim, dtype=dtype)
        self.values = torch.zeros(max_len, num_kv_heads, head_dim, dtype=dtype)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k, v [T, nkv, hd] after the stored tokens; return all keys and values so far."""
        end = self.length + k.shape[0]
        if end > self.keys.shape[0]:
            raise ValueError(f"cache holds {self.keys.shape[0]} tokens; cannot append {k.shape[0]} after {self.length}")
        self.keys[self.length:end] = k
        self.values[self.length:end] = v
        self.length = end
        return self.keys[:end], self.values[:end]


def attention_step(cache: KVCache, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Append this step's k, v to the cache, then attend causally from q over the whole cache."""
    offset = cache.length
    keys, values = cache.append(k, v)
    return gqa_attention(q, keys, values, offset)
