# Correct: the whole batch at once: reads every block of each row, zeroes the slots at or past seq_len with torch.where (so NaN cannot leak), masks their scores with -inf and turns fully masked rows into zeros.
from __future__ import annotations

import torch


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    if kv_c_cache.dim() != 4 or k_pe_cache.dim() != 4 or kv_c_cache.shape[:3] != k_pe_cache.shape[:3] \
            or kv_c_cache.shape[2] != 1:
        raise ValueError("caches must be [nb, bs, 1, L] and [nb, bs, 1, R]")
    B = seq_lens.shape[0]
    L, R, bs = kv_c_cache.shape[3], k_pe_cache.shape[3], kv_c_cache.shape[1]
    if q_nope.dim() != 3 or q_nope.shape[0] != B or q_nope.shape[2] != L or q_pe.shape != (B, q_nope.shape[1], R):
        raise ValueError("query shapes")
    if block_tables.dim() != 2 or block_tables.shape[0] != B:
        raise ValueError("block_tables shape")
    if B and (int(seq_lens.min()) < 0 or int(seq_lens.max()) > block_tables.shape[1] * bs):
        raise ValueError("seq_lens out of range")
    tables = block_tables.long()
    c = kv_c_cache[tables].flatten(1, 2).squeeze(2).float()          # [B, S, L]
    pe = k_pe_cache[tables].flatten(1, 2).squeeze(2).float()         # [B, S, R]
    visible = torch.arange(c.shape[1])[None, :] < seq_lens.long()[:, None]    # [B, S]
    c = torch.where(visible[..., None], c, torch.zeros(()))
    pe = torch.where(visible[..., None], pe, torch.zeros(()))
    scores = (torch.einsum("bhl,bsl->bhs", q_nope.float(), c) + torch.einsum("bhr,bsr->bhs", q_pe.float(), pe)) * scale
    probs = scores.masked_fill(~visible[:, None, :], float("-inf")).softmax(-1).nan_to_num(0.0)
    return torch.einsum("bhs,bsl->bhl", probs, c).to(q_nope.dtype)
