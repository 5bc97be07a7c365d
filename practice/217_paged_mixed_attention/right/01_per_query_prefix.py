# Correct: gathers each request's KV token by token through (block, offset) indices, then loops over its queries, attending each to the slice of keys it may see (no mask tensor); checks q_len before touching the cache.
from __future__ import annotations

import torch


def paged_attention(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale):
    bs = key_cache.shape[1]
    nh, nkv = query.shape[1], key_cache.shape[2]
    g = nh // nkv
    out = torch.zeros(query.shape, dtype=torch.float32)
    loc = [int(x) for x in query_start_loc]
    for b in range(len(seq_lens)):
        n = int(seq_lens[b])
        first, last = loc[b], loc[b + 1]
        if last - first > n:
            raise ValueError(f"request {b} has {last - first} new tokens but a KV length of {n}")
        pos = torch.arange(n)
        idx = block_tables[b].long()[pos // bs]
        k = key_cache[idx, pos % bs].float()          # [n, nkv, hd]
        v = value_cache[idx, pos % bs].float()
        for i, row in enumerate(range(first, last)):
            visible = n - (last - first) + i + 1      # keys 0 .. position of this query
            for h in range(nh):
                s = (k[:visible, h // g] @ query[row, h].float()) * scale
                out[row, h] = torch.softmax(s, dim=0) @ v[:visible, h // g]
    return out.to(query.dtype)
