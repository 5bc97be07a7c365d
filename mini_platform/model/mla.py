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
import sys
from typing import Any

import torch
from torch import nn

from ..distributed.parallel_state import get_tp_group
from .config import ModelConfig
from .layers import Linear, MergedLinear, RMSNorm, RotaryEmbedding, RowParallelLinear, Shard
from .sharding import divide


def split_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int,
                    v_head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``kv_b_proj.weight`` ``[nh * (dn + dv), L]`` -> ``(w_uk [nh, dn, L], w_uv [nh, dv, L])``, contiguous,
    in the weight's dtype (exercise 275 stands in for it). A ValueError names a weight of the wrong shape."""
    if weight.dim() != 2 or weight.shape[0] != num_heads * (qk_nope_head_dim + v_head_dim):
        raise ValueError(f"kv_b_proj weight must be [num_heads * (qk_nope_head_dim + v_head_dim) = "
                         f"{num_heads} * ({qk_nope_head_dim} + {v_head_dim}), kv_lora_rank], got {tuple(weight.shape)}")
    per_head = weight.view(num_heads, qk_nope_head_dim + v_head_dim, weight.shape[1])
    return per_head[:, :qk_nope_head_dim].contiguous(), per_head[:, qk_nope_head_dim:].contiguous()


def expand_latents(kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor,
                   w_uv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The expanded form: latents ``[S, L]`` and rotary keys ``[S, R]`` -> per-head keys ``[S, nh, dn + R]``
    (``W_UK c`` beside the shared rotary key) and values ``[S, nh, dv]`` (``W_UV c``)."""
    k_nope = torch.einsum("sl,hdl->shd", kv_c, w_uk)
    keys = torch.cat((k_nope, k_pe.unsqueeze(1).expand(-1, w_uk.shape[0], -1)), dim=-1)
    return keys, torch.einsum("sl,hvl->shv", kv_c, w_uv)


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


class MLAAttention(nn.Module):
    """DeepSeek's attention layer, named as the checkpoint names it (``self_attn.q_a_proj.weight``, ...).

    ``attention.mla(layer_idx, q_nope [T, nh, dn], q_pe [T, nh, R], kv_c [T, L], k_pe [T, R], w_uk, w_uv, scale)
    -> [T, nh, dv]`` stores the latent and the rotary key wherever it keeps them and attends (expanded or absorbed,
    its choice); ``q_pe`` and ``k_pe`` arrive rotated, ``kv_c`` normed.

    Tensor parallelism splits the heads, as vLLM's ``DeepseekV2MLAAttention`` does: ``q_b_proj`` (or ``q_proj``) and
    ``kv_b_proj`` are column-parallel by head, ``o_proj`` row-parallel; the down-projections ``q_a_proj`` and
    ``kv_a_proj_with_mqa`` and the latent cache are the same on every rank."""

    def __init__(self, config: ModelConfig, layer_idx: int, rotary: RotaryEmbedding, dtype: torch.dtype) -> None:
        super().__init__()
        mla = config.mla
        if mla is None:
            raise ValueError(f"{config.architecture} has no MLA settings; MLAAttention needs config.mla")
        self.layer_idx, self.rotary_emb = layer_idx, rotary
        tp = get_tp_group()
        total = config.num_attention_heads
        self.num_heads = nh = divide(total, tp.world_size, "num_attention_heads")
        first = tp.rank_in_group * nh
        self.dn, self.dr, self.dv, self.latent = (mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.v_head_dim,
                                                  mla.kv_lora_rank)
        qk = mla.qk_head_dim
        hidden, eps = config.hidden_size, config.rms_norm_eps
        if mla.q_lora_rank is None:   # V2-Lite: one projection
            self.q_proj = MergedLinear(hidden, {"q_proj": nh * qk}, False, dtype,
                                       shards={"q_proj": Shard(0, first * qk, total * qk)})
        else:
            self.q_a_proj = Linear(hidden, mla.q_lora_rank, config.qkv_bias, dtype)
            self.q_a_layernorm = RMSNorm(mla.q_lora_rank, eps, dtype)
            self.q_b_proj = MergedLinear(mla.q_lora_rank, {"q_b_proj": nh * qk}, False, dtype,
                                         shards={"q_b_proj": Shard(0, first * qk, total * qk)})
        self.kv_a_proj_with_mqa = Linear(hidden, self.latent + self.dr, config.qkv_bias, dtype)
        self.kv_a_layernorm = RMSNorm(self.latent, eps, dtype)
        per_head = self.dn + self.dv
        self.kv_b_proj = MergedLinear(self.latent, {"kv_b_proj": nh * per_head}, False, dtype,
                                      shards={"kv_b_proj": Shard(0, first * per_head, total * per_head)})
        self.o_proj = RowParallelLinear(total * self.dv, hidden, config.o_proj_bias, dtype)
        self.scale = _module().mla_softmax_scale(qk, config.rope_scaling)
        self.w_uk: torch.Tensor | None = None   # set by process_weights_after_loading
        self.w_uv: torch.Tensor | None = None

    def process_weights_after_loading(self) -> None:
        """Split ``kv_b_proj`` once into ``W_UK`` and ``W_UV`` (vLLM does the same after loading)."""
        self.w_uk, self.w_uv = _module().split_kv_b_proj(self.kv_b_proj.weight.data, self.num_heads, self.dn, self.dv)

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor, attention: Any) -> torch.Tensor:
        if self.w_uk is None:
            self.process_weights_after_loading()
        t = hidden.shape[0]
        if hasattr(self, "q_proj"):
            q = self.q_proj(hidden)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden)))
        q_nope, q_pe = q.view(t, self.num_heads, self.dn + self.dr).split([self.dn, self.dr], dim=-1)
        kv_c, k_pe = self.kv_a_proj_with_mqa(hidden).split([self.latent, self.dr], dim=-1)
        kv_c = self.kv_a_layernorm(kv_c.contiguous())
        q_pe, k_pe = self.rotary_emb(positions, q_pe.reshape(t, -1), k_pe.contiguous())
        out = attention.mla(self.layer_idx, q_nope, q_pe.view(t, self.num_heads, self.dr), kv_c, k_pe,
                            self.w_uk, self.w_uv, self.scale)
        return self.o_proj(out.reshape(t, self.num_heads * self.dv))


def _module() -> Any:
    """This module, so that the functions above are looked up at call time (a learner's exercise 274 / 275
    solution set here by ``practice/judge.py engine`` takes effect)."""
    return sys.modules[__name__]
