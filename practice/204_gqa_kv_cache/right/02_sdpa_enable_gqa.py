# Correct: torch's scaled_dot_product_attention in float32 with a boolean causal mask and the KV heads expanded by view/expand; the head check placed before any reshaping; attention_step computes the offset from the returned length.
from __future__ import annotations

import torch
import torch.nn.functional as F


def gqa_attention(q, k, v, offset):
    t, nh, hd = q.shape
    length, nkv, _ = k.shape
    if nkv == 0 or nh % nkv:
        raise ValueError(f"cannot group {nh} query heads over {nkv} KV heads")
    group = nh // nkv
    kk = k.float()[:, :, None, :].expand(length, nkv, group, hd).reshape(length, nh, hd)
    vv = v.float()[:, :, None, :].expand(length, nkv, group, hd).reshape(length, nh, hd)
    positions = torch.arange(offset, offset + t).unsqueeze(1)
    mask = torch.arange(length).unsqueeze(0) <= positions                  # [T, L], True = visible
    out = F.scaled_dot_product_attention(q.float().permute(1, 0, 2), kk.permute(1, 0, 2), vv.permute(1, 0, 2),
                                         attn_mask=mask)
    return out.permute(1, 0, 2).to(q.dtype)


class KVCache:
    def __init__(self, max_len, num_kv_heads, head_dim, dtype=torch.float32):
        self._store = torch.zeros(2, max_len, num_kv_heads, head_dim, dtype=dtype)
        self.length = 0

    def append(self, k, v):
        new_length = self.length + len(k)
        if new_length > self._store.shape[1]:
            raise ValueError(f"no room: the cache has {self._store.shape[1] - self.length} free slots, "
                             f"{len(k)} tokens given")
        self._store[0, self.length:new_length] = k
        self._store[1, self.length:new_length] = v
        self.length = new_length
        return self._store[0, :new_length], self._store[1, :new_length]


def attention_step(cache, q, k, v):
    keys, values = cache.append(k, v)
    return gqa_attention(q, keys, values, cache.length - k.shape[0])
