# Mistake: Scales the scores by head_dim ** -0.5 instead of the scale it is given.
"""Exercise 217: paged attention for a mixed batch (causal, bottom-right aligned) (solution)."""
from __future__ import annotations

import torch


def paged_attention(query: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_tables: torch.Tensor, query_start_loc: torch.Tensor, seq_lens: torch.Tensor,
                    scale: float) -> torch.Tensor:
    block_size, group = key_cache.shape[1], query.shape[1] // key_cache.shape[2]
    starts = query_start_loc.tolist()
    out = torch.zeros_like(query)
    for b, seq_len in enumerate(seq_lens.tolist()):
        q = query[starts[b]:starts[b + 1]].float()
        q_len = q.shape[0]
        if q_len > seq_len:
            raise ValueError(f"request {b}: {q_len} queries but only {seq_len} tokens of KV")
        blocks = block_tables[b, :-(-seq_len // block_size)].long()
        k = key_cache[blocks].flatten(0, 1)[:seq_len].float().repeat_interleave(group, dim=1)
        v = value_cache[blocks].flatten(0, 1)[:seq_len].float().repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * query.shape[-1] ** -0.5
        own = seq_len - q_len + torch.arange(q_len)
        scores = scores.masked_fill(torch.arange(seq_len)[None, :] > own[:, None], float("-inf"))
        out[starts[b]:starts[b + 1]] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).to(query.dtype)
    return out
