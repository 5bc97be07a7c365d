# Correct: torch's scaled_dot_product_attention per request with a boolean bottom-right mask built from the query positions and query heads grouped by a view [nkv, group]; validates every request's q_len in a first pass.
from __future__ import annotations

import torch
import torch.nn.functional as F


def paged_attention(query, key_cache, value_cache, block_tables, query_start_loc, seq_lens, scale):
    T, nh, hd = query.shape
    _, bs, nkv, _ = key_cache.shape
    group = nh // nkv
    qsl, lens = query_start_loc.tolist(), seq_lens.tolist()
    for b, n in enumerate(lens):
        if qsl[b + 1] - qsl[b] > n:
            raise ValueError(f"q_len {qsl[b + 1] - qsl[b]} > seq_len {n} for request {b}")
    out = torch.zeros_like(query)
    for b, n in enumerate(lens):
        lo, hi = qsl[b], qsl[b + 1]
        if hi == lo:
            continue
        used = (n + bs - 1) // bs
        ids = block_tables[b, :used].to(torch.long)
        k = key_cache.index_select(0, ids).reshape(used * bs, nkv, hd)[:n].float()
        v = value_cache.index_select(0, ids).reshape(used * bs, nkv, hd)[:n].float()
        q = query[lo:hi].float().reshape(hi - lo, nkv, group, hd).permute(1, 2, 0, 3)   # [nkv, g, q, hd]
        positions = torch.arange(n - (hi - lo), n)
        mask = torch.arange(n)[None, :] <= positions[:, None]                          # [q, n]
        o = F.scaled_dot_product_attention(q, k.permute(1, 0, 2)[:, None], v.permute(1, 0, 2)[:, None],
                                           attn_mask=mask, scale=scale)               # [nkv, g, q, hd]
        out[lo:hi] = o.permute(2, 0, 1, 3).reshape(hi - lo, nh, hd).to(query.dtype)
    return out
