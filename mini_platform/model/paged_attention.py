"""The attention the engine plugs into the model: KV written to a paged cache, then paged attention.

The model calls ``attention(layer_idx, q, k, v)`` once per layer and knows nothing about caches; the
model runner sets :attr:`PagedAttention.metadata` before each forward to say where this step's tokens
go (``slot_mapping``) and which blocks each request reads (``block_tables``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import ops
from .mla import expand_latents


@dataclass
class AttentionMetadata:
    """Where the tokens of one step live. ``T`` = tokens in the step, ``B`` = requests.

    - ``slot_mapping`` int32 ``[T]``: cache slot of each token (``block * block_size + offset``), -1 = padding.
    - ``block_tables`` int32 ``[B, max_blocks]``: each request's blocks in order (unused entries arbitrary).
    - ``query_start_loc`` int32 ``[B+1]``: request ``b``'s tokens are rows ``[qsl[b], qsl[b+1])``.
    - ``seq_lens`` int32 ``[B]``: each request's KV length after this step (cached + new tokens).
    - ``max_query_len``: the longest query in the step; 1 means a pure decode step (one query per request).

    Padding tokens (slot -1) come after the real ones; in a padded decode graph step each is a request of KV
    length 0 (``mini_platform.model_runner.pad_decode_step``). Their outputs are zeros and never sampled.
    """
    slot_mapping: torch.Tensor
    block_tables: torch.Tensor
    query_start_loc: torch.Tensor
    seq_lens: torch.Tensor
    max_query_len: int


def allocate_kv_caches(num_layers: int, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                       dtype: torch.dtype, device: str | torch.device = "cpu"
                       ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(key_cache, value_cache)`` per layer, each ``[num_blocks, block_size, num_kv_heads, head_dim]``.

    Left uninitialised (``torch.empty``): kernels read only the slots they were given, so nothing needs zeros,
    and on a CPU the operating system backs only the pages the requests really write.
    """
    if min(num_layers, num_blocks, block_size, num_kv_heads, head_dim) < 1:
        raise ValueError(f"every KV cache dimension must be >= 1, got num_layers={num_layers}, "
                         f"num_blocks={num_blocks}, block_size={block_size}, num_kv_heads={num_kv_heads}, "
                         f"head_dim={head_dim}")
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    return [(torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device))
            for _ in range(num_layers)]


def allocate_mla_caches(num_layers: int, num_blocks: int, block_size: int, kv_lora_rank: int, qk_rope_head_dim: int,
                        dtype: torch.dtype, device: str | torch.device = "cpu") -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The latent cache of MLA: ``(kv_c_cache [nb, bs, 1, L], k_pe_cache [nb, bs, 1, R])`` per layer, uninitialised
    (vllm-ascend's layout; one entry per token for all heads, the same on every tensor-parallel rank)."""
    if min(num_layers, num_blocks, block_size, kv_lora_rank, qk_rope_head_dim) < 1:
        raise ValueError(f"every latent cache dimension must be >= 1, got num_layers={num_layers}, "
                         f"num_blocks={num_blocks}, block_size={block_size}, kv_lora_rank={kv_lora_rank}, "
                         f"qk_rope_head_dim={qk_rope_head_dim}")
    return [(torch.empty(num_blocks, block_size, 1, kv_lora_rank, dtype=dtype, device=device),
             torch.empty(num_blocks, block_size, 1, qk_rope_head_dim, dtype=dtype, device=device))
            for _ in range(num_layers)]


class PagedAttention:
    """``attention(layer_idx, q, k, v)`` over a paged KV cache, on the kernel backend ``backend``
    (``None`` = the current backend, see :mod:`mini_platform.ops`). Scale is ``head_dim ** -0.5``.
    Latent attention layers (DeepSeek) call :meth:`mla` instead; their caches are the latent pairs."""

    def __init__(self, kv_caches: list[tuple[torch.Tensor, torch.Tensor]], backend: str | None = None) -> None:
        self.kv_caches = kv_caches
        self.backend = backend
        self.metadata: AttentionMetadata | None = None

    def __call__(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        md = self.metadata
        if md is None:
            raise RuntimeError("PagedAttention.metadata is not set: the model runner must set it before each forward")
        key_cache, value_cache = self.kv_caches[layer_idx]
        ops.reshape_and_cache(k, v, key_cache, value_cache, md.slot_mapping, backend=self.backend)
        scale = q.shape[-1] ** -0.5
        if md.max_query_len == 1 and q.shape[0] == md.seq_lens.shape[0]:  # pure decode, no padding rows
            return ops.paged_decode_attention(q, key_cache, value_cache, md.block_tables, md.seq_lens, scale,
                                              backend=self.backend)
        return ops.paged_attention(q, key_cache, value_cache, md.block_tables, md.query_start_loc, md.seq_lens,
                                   scale, backend=self.backend)

    def mla(self, layer_idx: int, q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor,
            w_uk: torch.Tensor, w_uv: torch.Tensor, scale: float) -> torch.Tensor:
        """Latent attention over the paged latent cache: ``[T, nh, dv]``.

        A pure decode step runs absorbed: ``W_UK`` is folded into the query (``[B, nh, L]``), attention reads only
        the latent cache, and ``W_UV`` turns the latent output into each head's value. Any other step (prompts,
        chunks, mixed) runs expanded, as vLLM's MLA prefill does: every request's cached latents are read back and
        expanded into per-head keys and values once, then ordinary causal attention."""
        md = self.metadata
        if md is None:
            raise RuntimeError("PagedAttention.metadata is not set: the model runner must set it before each forward")
        kv_c_cache, k_pe_cache = self.kv_caches[layer_idx]
        ops.concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, md.slot_mapping, backend=self.backend)
        if md.max_query_len == 1 and q_nope.shape[0] == md.seq_lens.shape[0]:  # pure decode, no padding rows
            q_latent = torch.einsum("bhd,hdl->bhl", q_nope, w_uk)
            latent = ops.mla_decode_attention(q_latent, q_pe, kv_c_cache, k_pe_cache, md.block_tables, md.seq_lens,
                                              scale, backend=self.backend)
            return torch.einsum("bhl,hvl->bhv", latent, w_uv)
        c, pe = ops.gather_mla_cache(kv_c_cache, k_pe_cache, md.block_tables, md.seq_lens, backend=self.backend)
        keys, values = expand_latents(c, pe, w_uk, w_uv)
        kv_start_loc = torch.nn.functional.pad(md.seq_lens.cumsum(0), (1, 0)).to(md.query_start_loc.dtype)
        return ops.mla_prefill_attention(torch.cat((q_nope, q_pe), dim=-1), keys, values, md.query_start_loc,
                                         kv_start_loc, scale, backend=self.backend)
