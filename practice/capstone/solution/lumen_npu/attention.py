"""LumenAttention: the attention backend the model runner builds on the Lumen platform.

Each layer first writes its new K/V into the paged cache, then attends. Lumen has two attention
kernels: ``paged_decode_attention`` for a pure decode step (one query per request, no padding rows),
whose shapes are fixed so a decode graph can record it, and ``paged_attention`` for everything else.
"""
from __future__ import annotations

import torch

from mini_platform import ops
from mini_platform.model.paged_attention import PagedAttention


class LumenAttention(PagedAttention):
    def __call__(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        md = self.metadata
        if md is None:
            raise RuntimeError("LumenAttention.metadata is not set: the model runner sets it before each forward")
        key_cache, value_cache = self.kv_caches[layer_idx]
        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)
        scale = q.shape[-1] ** -0.5
        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:
            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,
                                              backend=self.backend)
        return ops.paged_attention(q, key_cache, value_cache, md.block_tables, md.query_start_loc, md.seq_lens,
                                   scale, backend=self.backend)
