# Correct: indexes the caches by (block, offset) tensors instead of a flat view, validates in another order with its own messages.
from __future__ import annotations

import torch


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    if kv_c.ndim != 2 or k_pe.ndim != 2 or slot_mapping.ndim != 1:
        raise ValueError("kv_c and k_pe must be 2-D and slot_mapping 1-D")
    if kv_c_cache.ndim != 4 or k_pe_cache.ndim != 4:
        raise ValueError("the caches must be 4-D")
    nb, bs, one, width = kv_c_cache.shape
    if one != 1 or tuple(k_pe_cache.shape[:3]) != (nb, bs, 1):
        raise ValueError("the caches must be [nb, bs, 1, L] and [nb, bs, 1, R]")
    t = slot_mapping.shape[0]
    if kv_c.shape != (t, width) or k_pe.shape != (t, k_pe_cache.shape[3]):
        raise ValueError("kv_c / k_pe do not match the caches and slot_mapping")
    valid = slot_mapping >= 0
    if bool((slot_mapping >= nb * bs).any()):
        raise ValueError("slot outside the cache")
    s = slot_mapping[valid].long()
    block, offset = s // bs, s % bs
    kv_c_cache[block, offset, 0] = kv_c[valid].to(kv_c_cache.dtype)
    k_pe_cache[block, offset, 0] = k_pe[valid].to(k_pe_cache.dtype)
