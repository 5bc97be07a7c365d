"""LumenAttention: the attention backend the model runner builds on the Lumen platform.

Each layer first writes its new K/V into the paged cache, then attends. Lumen has two attention
kernels: ``paged_decode_attention`` for a pure decode step (one query per request, no padding rows),
whose shapes are fixed so a decode graph can record it, and ``paged_attention`` for everything else.
"""
from __future__ import annotations

import torch

from mini_platform import ops  # noqa: F401
from mini_platform.model.paged_attention import PagedAttention


class LumenAttention(PagedAttention):
    def __call__(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        # TODO(stage 263): write this step's k, v into layer layer_idx's caches at self.metadata.slot_mapping,
        # then attend on self.backend with scale head_dim ** -0.5: paged_decode_attention for a pure decode
        # step (max_query_len == 1 and one query row per request, no padding rows), paged_attention otherwise;
        # decide from max_query_len and shapes only (a decode graph cannot record reads of tensor values).
        raise NotImplementedError("LumenAttention.__call__")
