"""Multi-head latent attention (MLA, DeepSeek-V2/V3): the weight arithmetic shared by its two forms.

MLA caches one latent vector per token, ``c = RMSNorm(W_DKV h)`` (``kv_lora_rank`` values), plus one
rotary key ``k_pe`` (``qk_rope_head_dim``), shared by every head. ``kv_b_proj`` expands the latent into each
head's no-rope key and value: its weight ``[nh * (dn + dv), L]`` holds, per head, ``dn`` rows of ``W_UK`` then
``dv`` rows of ``W_UV``.

- expanded (prefill): ``k_nope = W_UK c``, ``v = W_UV c`` for every cached token, then ordinary attention;
- absorbed (decode): ``q_nope . (W_UK c) = (W_UK^T q_nope) . c``, so the query is moved into the latent
  space once per step and attention reads only the latent cache; ``W_UV`` is applied to the attention
  output afterwards (``sum_t p_t W_UV c_t = W_UV sum_t p_t c_t``).
"""
from __future__ import annotations

import math
from typing import Any

import torch


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``kv_b_proj.weight`` ``[nh * (dn + dv), L]`` -> ``(w_uk [nh, dn, L], w_uv [nh, dv, L])``, contiguous copies
    in the weight's dtype (exercise 275 stands in for it). A ValueError names a weight of the wrong shape."""
    if weight.dim() != 2 or weight.shape[0] != num_heads * (qk_nope_head_dim + v_head_dim):
        raise ValueError(f"kv_b_proj weight must be [num_heads * (qk_nope_head_dim + v_head_dim) = "
                         f"{num_heads} * ({qk_nope_head_dim} + {v_head_dim}), kv_lora_rank], got {tuple(weight.shape)}")
    per_head = weight.view(num_heads, qk_nope_head_dim + v_head_dim, weight.shape[1])
    return per_head[:, :qk_nope_head_dim].contiguous(), per_head[:, qk_nope_head_dim:].contiguous()


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude correction ``0.1 * mscale * ln(scale) + 1`` (1 when ``scale <= 1``)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def mla_softmax_scale(qk_head_dim: int, rope_scaling: dict[str, Any] | None) -> float:
    """The softmax scale of MLA: ``qk_head_dim ** -0.5``, times ``yarn_mscale(factor, mscale_all_dim) ** 2`` when
    the RoPE scaling is not the default and sets a non-zero ``mscale_all_dim`` (DeepSeek's YaRN; transformers'
    ``yarn_apply_mscale``, vLLM's ``DeepseekV2Attention``). Exercise 274 stands in for it."""
    if not isinstance(qk_head_dim, int) or isinstance(qk_head_dim, bool) or qk_head_dim < 1:
        raise ValueError(f"qk_head_dim must be a positive integer, got {qk_head_dim!r}")
    scale = qk_head_dim ** -0.5
    scaling = rope_scaling or {}
    if scaling.get("rope_type", "default") != "default" and scaling.get("mscale_all_dim"):
        scale *= yarn_mscale(scaling["factor"], scaling["mscale_all_dim"]) ** 2
    return scale
