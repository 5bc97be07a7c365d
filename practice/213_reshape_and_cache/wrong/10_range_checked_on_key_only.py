# Mistake: Writes the value cache before checking the slots' range, so a bad slot leaves the value cache half-written.
"""Exercise 213: write K/V into a paged KV cache by slot mapping (solution)."""
from __future__ import annotations

import torch


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor,
                      value_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    if key.dim() != 3 or value.shape != key.shape or slot_mapping.shape != key.shape[:1]:
        raise ValueError(f"need key/value [T, nkv, hd] and slot_mapping [T], got {tuple(key.shape)}, "
                         f"{tuple(value.shape)}, {tuple(slot_mapping.shape)}")
    if key_cache.shape != value_cache.shape or key_cache.shape[2:] != key.shape[1:]:
        raise ValueError(f"caches {tuple(key_cache.shape)} do not fit keys {tuple(key.shape)}")
    num_blocks, block_size = key_cache.shape[:2]
    slots = slot_mapping.long()
    keep = slots >= 0
    slots = slots[keep]
    ok = slots < num_blocks * block_size
    value_cache[slots[ok] // block_size, slots[ok] % block_size] = value[keep][ok].to(value_cache.dtype)
    if slots.numel() and int(slots.max()) >= num_blocks * block_size:
        raise ValueError(f"slot {int(slots.max())} is outside the cache of {num_blocks * block_size} slots")
    blocks, offsets = slots // block_size, slots % block_size
    key_cache[blocks, offsets] = key[keep].to(key_cache.dtype)
    value_cache[blocks, offsets] = value[keep].to(value_cache.dtype)
