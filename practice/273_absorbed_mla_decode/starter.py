"""Exercise 273: absorbed MLA decode over the paged latent cache. Keep the name and signature."""
from __future__ import annotations

import torch


def mla_decode_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """One query per request: softmax_t(scale * (q_nope . c_t + q_pe . k_pe_t)) weighted sum of c_t over the first
    seq_lens[b] cached tokens; [B, nh, L] in q_nope's dtype, zeros for seq_lens[b] == 0."""
    # TODO: check the caches, q_nope / q_pe, block_tables and seq_lens
    # TODO: per request: the first seq_lens[b] tokens through the block table (block t // bs, offset t % bs)
    # TODO: scores in fp32, softmax, weighted sum of the latents; never let unwritten slots (NaN) in
    raise NotImplementedError("mla_decode_attention")
