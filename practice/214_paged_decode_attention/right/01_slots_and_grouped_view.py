# Correct: per sequence, gathers token by token through the computed (block, offset) indices and groups query heads with a view [nkv, group, hd] instead of repeating K and V; validates all seq_lens before computing.
from __future__ import annotations

import torch


def paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale):
    batch, heads, dim = query.shape
    _, block_size, kv_heads, _ = key_cache.shape
    if heads % kv_heads != 0:
        raise ValueError(f"{heads} query heads cannot share {kv_heads} KV heads evenly")
    capacity = block_tables.shape[1] * block_size
    lens = [int(n) for n in seq_lens]
    for b, n in enumerate(lens):
        if n > capacity:
            raise ValueError(f"seq_lens[{b}]={n} exceeds the block table's {capacity} slots")
    group = heads // kv_heads
    result = torch.zeros(batch, heads, dim, dtype=torch.float32)
    for b, n in enumerate(lens):
        pos = torch.arange(n)
        blocks = block_tables[b].long()[pos // block_size]
        offsets = pos % block_size
        k = key_cache[blocks, offsets].float()                       # [n, nkv, hd]
        v = value_cache[blocks, offsets].float()
        q = query[b].float().view(kv_heads, group, dim)              # [nkv, g, hd]
        scores = torch.einsum("kgd,nkd->kgn", q, k) * scale
        probs = torch.softmax(scores, dim=-1)
        result[b] = torch.einsum("kgn,nkd->kgd", probs, v).reshape(heads, dim)
    return result.to(query.dtype)
