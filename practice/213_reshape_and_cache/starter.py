"""Exercise 213: write K/V into a paged KV cache by slot mapping. Keep the names."""
from __future__ import annotations

import torch


def reshape_and_cache(key: torch.Tensor, value: torch.Tensor, key_cache: torch.Tensor,
                      value_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """key/value [T, nkv, hd]; caches [nb, bs, nkv, hd]; slot_mapping int32 [T], -1 = skip. In place."""
    # TODO: check shapes; keep slots >= 0; check the range; write with one indexed assignment per cache
    raise NotImplementedError("reshape_and_cache")
