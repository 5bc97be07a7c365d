# Correct: finds the valid tokens with nonzero and writes them with index_copy_ on flattened views, after a check that collects the problems first.
from __future__ import annotations

import torch


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    problems = []
    if kv_c_cache.dim() != 4 or k_pe_cache.dim() != 4:
        problems.append("caches must be 4-D")
    elif kv_c_cache.shape[:3] != k_pe_cache.shape[:3] or kv_c_cache.shape[2] != 1:
        problems.append("caches must share [nb, bs, 1]")
    else:
        t = slot_mapping.numel() if slot_mapping.dim() == 1 else -1
        if list(kv_c.shape) != [t, kv_c_cache.shape[3]]:
            problems.append("kv_c shape")
        if list(k_pe.shape) != [t, k_pe_cache.shape[3]]:
            problems.append("k_pe shape")
        if t > 0 and slot_mapping.max().item() >= kv_c_cache.shape[0] * kv_c_cache.shape[1]:
            problems.append("slot out of range")
    if problems:
        raise ValueError("; ".join(problems))
    rows = torch.nonzero(slot_mapping >= 0).flatten()
    targets = slot_mapping.long()[rows]
    kv_c_cache.flatten(0, 2).index_copy_(0, targets, kv_c[rows].to(kv_c_cache.dtype))
    k_pe_cache.flatten(0, 2).index_copy_(0, targets, k_pe[rows].to(k_pe_cache.dtype))
