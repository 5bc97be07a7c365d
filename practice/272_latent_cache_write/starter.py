"""Exercise 272: write MLA latents and rotary keys to the paged latent cache. Keep the name and signature."""
from __future__ import annotations

import torch


def concat_and_cache_mla(kv_c: torch.Tensor, k_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    """Write kv_c [T, L] and k_pe [T, R] to slot_mapping (block * block_size + offset) of
    kv_c_cache [nb, bs, 1, L] and k_pe_cache [nb, bs, 1, R], in place; slots < 0 are skipped."""
    # TODO: check the shapes (also for T = 0) and that every slot is < num_blocks * block_size, before writing
    # TODO: write the rows whose slot is >= 0, converted to each cache's dtype
    raise NotImplementedError("concat_and_cache_mla")
