# Mistake: checks q_nope's shape but not q_pe's.
"""Exercise 273: absorbed MLA decode over the paged latent cache."""
from __future__ import annotations

import torch


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    if kv_c_cache.dim() != 4 or k_pe_cache.dim() != 4 or kv_c_cache.shape[:3] != k_pe_cache.shape[:3] \
            or kv_c_cache.shape[2] != 1:
        raise ValueError(f"kv_c_cache and k_pe_cache must be [nb, bs, 1, L] and [nb, bs, 1, R], got "
                         f"{tuple(kv_c_cache.shape)} and {tuple(k_pe_cache.shape)}")
    block_size, latent, rope = kv_c_cache.shape[1], kv_c_cache.shape[3], k_pe_cache.shape[3]
    batch = seq_lens.shape[0]
    if q_nope.dim() != 3 or q_nope.shape[0] != batch or q_nope.shape[2] != latent:
        raise ValueError(f"need q_nope [B={batch}, nh, {latent}] and q_pe [B, nh, {rope}], got "
                         f"{tuple(q_nope.shape)} and {tuple(q_pe.shape)}")
    if block_tables.dim() != 2 or block_tables.shape[0] != batch:
        raise ValueError(f"block_tables must be [B={batch}, max_blocks], got {tuple(block_tables.shape)}")
    lens = seq_lens.tolist()
    capacity = block_tables.shape[1] * block_size
    if any(not 0 <= n <= capacity for n in lens):
        raise ValueError(f"seq_lens must be in [0, max_blocks * block_size = {capacity}], got {lens}")

    out = torch.zeros(batch, q_nope.shape[1], latent, dtype=torch.float32)
    for b, n in enumerate(lens):
        if n == 0:
            continue                                            # a padding row: zeros
        positions = torch.arange(n)
        blocks = block_tables[b].long()[positions // block_size]
        c = kv_c_cache[blocks, positions % block_size, 0].float()       # [n, L]: only written slots are read
        pe = k_pe_cache[blocks, positions % block_size, 0].float()      # [n, R]
        scores = (q_nope[b].float() @ c.T + q_pe[b].float() @ pe.T) * scale   # [nh, n]
        out[b] = scores.softmax(dim=-1) @ c
    return out.to(q_nope.dtype)
