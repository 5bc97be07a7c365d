# Correct: concatenates [q_nope, q_pe] and [c, k_pe] into one key per token and calls scaled_dot_product_attention with the latents as values, per request, over the token slots gathered from the block table.
from __future__ import annotations

import torch
import torch.nn.functional as F


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    shapes_ok = (kv_c_cache.dim() == 4 and k_pe_cache.dim() == 4 and kv_c_cache.shape[2] == 1
                 and kv_c_cache.shape[:3] == k_pe_cache.shape[:3])
    if not shapes_ok:
        raise ValueError("bad latent cache shapes")
    nb, bs, _, L = kv_c_cache.shape
    B = len(seq_lens)
    if tuple(q_nope.shape[::2]) != (B, L) or q_nope.dim() != 3 or tuple(q_pe.shape) != (B, q_nope.shape[1], k_pe_cache.shape[3]):
        raise ValueError("bad query shapes")
    if block_tables.dim() != 2 or len(block_tables) != B:
        raise ValueError("bad block_tables shape")
    flat_c, flat_pe = kv_c_cache.reshape(nb * bs, L), k_pe_cache.reshape(nb * bs, -1)
    out = q_nope.new_zeros(q_nope.shape, dtype=torch.float32)
    for b in range(B):
        n = int(seq_lens[b])
        if n < 0 or n > block_tables.shape[1] * bs:
            raise ValueError(f"seq_lens[{b}] = {n} does not fit the block table")
        if n == 0:
            continue
        t = torch.arange(n)
        slots = block_tables[b, t // bs].long() * bs + t % bs
        c, pe = flat_c[slots].float(), flat_pe[slots].float()
        query = torch.cat([q_nope[b], q_pe[b]], dim=-1).float()[:, None, :]           # [nh, 1, L + R]
        key = torch.cat([c, pe], dim=-1)[None].expand(query.shape[0], -1, -1)          # [nh, n, L + R]
        value = c[None].expand(query.shape[0], -1, -1)                                 # [nh, n, L]
        out[b] = F.scaled_dot_product_attention(query, key, value, scale=scale)[:, 0]
    return out.to(q_nope.dtype)
