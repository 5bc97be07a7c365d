# Mistake: Gathers whole blocks for a padded batch and only masks the scores past seq_len; the unwritten slots' values still enter the weighted sum (0 * NaN = NaN).
from __future__ import annotations

import torch


def paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens, scale):
    B, nh, hd = query.shape
    bs, nkv = key_cache.shape[1], key_cache.shape[2]
    if nh % nkv:
        raise ValueError("num_heads must be a multiple of num_kv_heads")
    lens = seq_lens.long()
    if B and int(lens.max()) > block_tables.shape[1] * bs:
        raise ValueError(f"a sequence of {int(lens.max())} tokens overflows {block_tables.shape[1]} blocks of {bs}")
    if B == 0:
        return query.clone()
    cols = -(-int(lens.max()) // bs)
    needed = torch.arange(cols)[None, :] < ((lens + bs - 1) // bs)[:, None]          # [B, cols]
    ids = torch.where(needed, block_tables[:, :cols].long(), torch.zeros((), dtype=torch.long))
    k = key_cache[ids].reshape(B, cols * bs, nkv, hd).float()
    v = value_cache[ids].reshape(B, cols * bs, nkv, hd).float()
    g = nh // nkv
    k = k.repeat_interleave(g, dim=2)                                                 # [B, L, nh, hd]
    v = v.repeat_interleave(g, dim=2)
    scores = torch.einsum("bhd,blhd->bhl", query.float(), k) * scale
    valid = torch.arange(cols * bs)[None, :] < lens[:, None]                          # [B, L]
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    out = torch.einsum("bhl,blhd->bhd", scores.softmax(dim=-1), v)
    return out.to(query.dtype)
