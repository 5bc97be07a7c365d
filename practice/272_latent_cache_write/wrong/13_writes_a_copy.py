# Mistake: writes the latents into a flattened clone of the cache (flatten().clone()), so kv_c_cache itself is never changed; only k_pe_cache is written in place.
"""Exercise 272: write MLA latents and rotary keys to the paged latent cache."""
from __future__ import annotations

import torch


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    if kv_c_cache.dim() != 4 or k_pe_cache.dim() != 4 or kv_c_cache.shape[:3] != k_pe_cache.shape[:3] \
            or kv_c_cache.shape[2] != 1:
        raise ValueError(f"kv_c_cache and k_pe_cache must be [nb, bs, 1, L] and [nb, bs, 1, R], got "
                         f"{tuple(kv_c_cache.shape)} and {tuple(k_pe_cache.shape)}")
    num_blocks, block_size, _, latent = kv_c_cache.shape
    rope = k_pe_cache.shape[3]
    tokens = kv_c.shape[0] if kv_c.dim() == 2 else -1
    if tuple(kv_c.shape) != (tokens, latent) or tuple(k_pe.shape) != (tokens, rope) \
            or tuple(slot_mapping.shape) != (tokens,):
        raise ValueError(f"need kv_c [T, {latent}], k_pe [T, {rope}] and slot_mapping [T], got "
                         f"{tuple(kv_c.shape)}, {tuple(k_pe.shape)} and {tuple(slot_mapping.shape)}")
    slots = slot_mapping.long()
    if tokens and int(slots.max()) >= num_blocks * block_size:
        raise ValueError(f"slot {int(slots.max())} is outside the cache ({num_blocks} blocks x {block_size} slots)")
    keep = slots >= 0
    flat = kv_c_cache.flatten(0, 2).clone()
    flat[slots[keep]] = kv_c[keep].to(kv_c_cache.dtype)
    k_pe_cache.view(num_blocks * block_size, rope)[slots[keep]] = k_pe[keep].to(k_pe_cache.dtype)
