# Correct: drops the padding with a boolean mask, splits slots with torch.div(rounding_mode="floor") and torch.remainder, and writes both caches with index_put_ after checking every shape and slot.
from __future__ import annotations

import torch


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    tokens = key.shape[0] if key.dim() == 3 else None
    if tokens is None or tuple(value.shape) != tuple(key.shape) or tuple(slot_mapping.shape) != (tokens,):
        raise ValueError("shapes: key and value [T, nkv, hd], slot_mapping [T]")
    if key_cache.dim() != 4 or key_cache.shape != value_cache.shape:
        raise ValueError("the two caches must share one [num_blocks, block_size, nkv, hd] shape")
    blocks_total, block_size, nkv, hd = key_cache.shape
    if (nkv, hd) != tuple(key.shape[1:]):
        raise ValueError(f"cache heads/dim {(nkv, hd)} vs key {tuple(key.shape[1:])}")
    slots = slot_mapping.to(torch.int64)
    valid = slots.ge(0)
    slots = slots[valid]
    if bool((slots >= blocks_total * block_size).any()):
        raise ValueError("a slot lies beyond the last block of the cache")
    block = torch.div(slots, block_size, rounding_mode="floor")
    offset = torch.remainder(slots, block_size)
    key_cache.index_put_((block, offset), key[valid].to(key_cache.dtype))
    value_cache.index_put_((block, offset), value[valid].to(value_cache.dtype))
