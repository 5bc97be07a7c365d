# Correct: loops over query heads (head h reads KV head h // group) with a triu mask shifted by the offset; the cache keeps a write position and slices a preallocated tensor, checking capacity with its own wording.
from __future__ import annotations

import math

import torch


def gqa_attention(q, k, v, offset):
    tokens, heads, dim = q.shape
    kv_heads = k.shape[1]
    if heads % kv_heads != 0:
        raise ValueError(f"num_heads={heads} must be a multiple of num_kv_heads={kv_heads}")
    group = heads // kv_heads
    length = k.shape[0]
    hidden = torch.ones(tokens, length, dtype=torch.bool).triu(diagonal=offset + 1)
    out = torch.empty(tokens, heads, dim, dtype=torch.float32)
    for h in range(heads):
        keys = k[:, h // group].to(torch.float32)
        vals = v[:, h // group].to(torch.float32)
        scores = q[:, h].to(torch.float32) @ keys.T / math.sqrt(dim)
        scores[hidden] = -math.inf
        out[:, h] = scores.softmax(dim=1) @ vals
    return out.to(q.dtype)


class KVCache:
    def __init__(self, max_len, num_kv_heads, head_dim, dtype=torch.float32):
        self.max_len = max_len
        self.k = torch.empty(max_len, num_kv_heads, head_dim, dtype=dtype)
        self.v = torch.empty(max_len, num_kv_heads, head_dim, dtype=dtype)
        self.length = 0

    def append(self, k, v):
        n = k.shape[0]
        if self.length + n > self.max_len:
            raise ValueError(f"KV cache full: {self.length} + {n} > {self.max_len}")
        self.k[self.length:self.length + n].copy_(k)
        self.v[self.length:self.length + n].copy_(v)
        self.length += n
        return self.k[:self.length], self.v[:self.length]


def attention_step(cache, q, k, v):
    start = cache.length
    all_k, all_v = cache.append(k, v)
    return gqa_attention(q, all_k, all_v, offset=start)
