# Correct: views each cache as [num_blocks * block_size, nkv, hd] and writes with index_copy_ on the flat slots; checks the range on the whole slot_mapping (padding included, as the largest value) before the shapes' second half.
from __future__ import annotations

import torch


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    if key.ndim != 3:
        raise ValueError(f"key must be [T, num_kv_heads, head_dim], got shape {list(key.shape)}")
    if value.shape != key.shape:
        raise ValueError(f"value shape {list(value.shape)} != key shape {list(key.shape)}")
    if slot_mapping.ndim != 1 or slot_mapping.numel() != key.shape[0]:
        raise ValueError(f"slot_mapping must have one slot per token ({key.shape[0]})")
    if key_cache.ndim != 4 or value_cache.shape != key_cache.shape or tuple(key_cache.shape[2:]) != tuple(key.shape[1:]):
        raise ValueError("key_cache/value_cache must both be [num_blocks, block_size, num_kv_heads, head_dim]")
    total = key_cache.shape[0] * key_cache.shape[1]
    if slot_mapping.numel() and int(slot_mapping.max()) >= total:
        raise ValueError(f"slot {int(slot_mapping.max())} does not exist (cache has {total} slots)")
    real = (slot_mapping >= 0).nonzero().flatten()
    slots = slot_mapping.index_select(0, real).long()
    flat_k = key_cache.view(total, *key_cache.shape[2:])
    flat_v = value_cache.view(total, *value_cache.shape[2:])
    flat_k.index_copy_(0, slots, key.index_select(0, real).to(key_cache.dtype))
    flat_v.index_copy_(0, slots, value.index_select(0, real).to(value_cache.dtype))
