"""The building blocks of a Llama/Qwen2 decoder. Every kernel goes through ``mini_platform.ops``.

| layer | kernel(s) it calls |
| --- | --- |
| :class:`RMSNorm` | ``ops.rms_norm`` (first use) / ``ops.fused_add_rms_norm`` (with a residual) |
| :class:`RotaryEmbedding` | ``ops.rotary_embedding`` (neox style, a cos/sin cache indexed by position) |
| :class:`SiluAndMulMLP` | ``ops.silu_and_mul`` between two matmuls |
| :class:`Attention` | the attention callable it is given (contiguous or paged), after RoPE |

:class:`RMSNorm` and :class:`RotaryEmbedding` are custom ops (:class:`~mini_platform.model.custom_op.CustomOp`), registered under
vLLM's names (``"rms_norm"``, ``"rotary_embedding"``): a platform plugin can replace them with its own subclass
(``CustomOp.register_oot``), whose ``forward_oot`` then runs on its platform.

Matmuls are ``ops.linear`` (``F.linear`` unless the backend has its own: the ``cpu`` backend runs a compiled GEMV
for one bf16 token). Q/K/V and gate/up are merged into one weight each (one matmul
instead of three or two); :class:`MergedLinear` records which rows came from which checkpoint tensor.

Tensor parallelism (chapter 8): the layers ask ``get_tp_group()`` for the group they are split over
(a single rank unless a worker set one up). :class:`MergedLinear` is column-parallel (each rank holds
some output rows), :class:`RowParallelLinear` holds some input columns and all-reduces its output, and
:class:`VocabParallelEmbedding` holds some vocabulary rows. Each says, per checkpoint tensor, which
:class:`Shard` of it to load; ``model/sharding.py`` holds the arithmetic.
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .. import ops
from ..distributed.parallel_state import get_tp_group
from .config import ModelConfig
from .custom_op import CustomOp
from . import sharding
from .sharding import divide

AttentionFn = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


class Shard(NamedTuple):
    """The slice of a checkpoint tensor a parameter holds: along ``dim``, from ``start`` on, as many rows as the
    parameter has; ``size`` is the whole checkpoint tensor's extent along ``dim`` (checked on load)."""
    dim: int
    start: int
    size: int


def _param(*shape: int, dtype: torch.dtype) -> nn.Parameter:
    return nn.Parameter(torch.empty(*shape, dtype=dtype), requires_grad=False)


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = _param(out_features, in_features, dtype=dtype)
        self.bias = _param(out_features, dtype=dtype) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.linear(x, self.weight, self.bias)


class MergedLinear(Linear):
    """Several checkpoint projections stacked along the output dim, e.g. ``{"q_proj": 64, "k_proj": 16, ...}``.

    Column-parallel: ``parts`` are the rows this rank holds; ``shards`` (default: each part is the whole
    tensor) gives, per part, the checkpoint rows they come from. The output stays split across ranks."""

    def __init__(self, in_features: int, parts: dict[str, int], bias: bool, dtype: torch.dtype,
                 shards: dict[str, Shard] | None = None) -> None:
        super().__init__(in_features, sum(parts.values()), bias, dtype)
        self.parts = parts
        self.shards = shards or {name: Shard(0, 0, size) for name, size in parts.items()}

    def part_rows(self) -> dict[str, slice]:
        """Checkpoint name -> rows of the merged weight it fills."""
        rows, start = {}, 0
        for name, size in self.parts.items():
            rows[name] = slice(start, start + size)
            start += size
        return rows


class RowParallelLinear(Linear):
    """``y = x W^T + b`` with ``W``'s input columns split across ranks: each rank multiplies its slice of ``x``
    (the output of a column-parallel layer) and the partial sums are all-reduced; rank 0 alone adds the bias."""

    def __init__(self, in_features: int, out_features: int, bias: bool, dtype: torch.dtype) -> None:
        self.tp = get_tp_group()
        super().__init__(divide(in_features, self.tp.world_size, "in_features"), out_features, bias, dtype)
        self.shard = Shard(1, self.tp.rank_in_group * self.weight.shape[1], in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tp.all_reduce(ops.linear(x, self.weight, self.bias if self.tp.rank_in_group == 0 else None))


class VocabParallelEmbedding(nn.Module):
    """Token embeddings with the vocabulary split across ranks (padded to a multiple of 64 first). A rank
    looks up the ids it holds, writes zeros for the others, and the all-reduce fills in the rest.
    The same weight serves as the LM head (:meth:`logits`): each rank scores its ids, an all-gather joins them."""

    def __init__(self, num_embeddings: int, dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.tp = get_tp_group()
        self.num_embeddings = num_embeddings
        self.start, rows, real_rows = sharding.vocab_range(num_embeddings, self.tp.world_size, self.tp.rank_in_group)
        self.weight = _param(rows, dim, dtype=dtype)
        self.weight.data[real_rows:].zero_()  # padding rows: never looked up, score 0 (cut off in logits)
        self.shard = Shard(0, self.start, num_embeddings)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.tp.world_size == 1:
            return F.embedding(input_ids, self.weight)
        local = input_ids - self.start
        held = (local >= 0) & (local < self.weight.shape[0])
        out = F.embedding(local.masked_fill(~held, 0), self.weight).masked_fill(~held.unsqueeze(-1), 0)
        return self.tp.all_reduce(out)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``[T, H]`` -> fp32 logits ``[T, V]`` over the whole vocabulary, on every rank."""
        logits = ops.linear(hidden, self.weight).float()
        return self.tp.all_gather(logits, dim=-1)[:, :self.num_embeddings]


@CustomOp.register("rms_norm")
class RMSNorm(CustomOp):
    def __init__(self, dim: int, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = _param(dim, dtype=dtype)
        self.eps = eps

    def forward_native(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> Any:
        """``rms_norm(x)``; with a residual, ``(rms_norm(x + residual), x + residual)``."""
        if residual is None:
            return ops.rms_norm(x, self.weight, self.eps)
        return ops.fused_add_rms_norm(x, residual, self.weight, self.eps)


def rope_inv_freq(head_dim: int, theta: float, scaling: dict[str, Any] | None = None) -> torch.Tensor:
    """Inverse frequencies ``theta ** (-2i / head_dim)`` (fp32), adjusted for linear, llama3 or yarn scaling.

    ``dynamic`` (NTK) scaling changes the frequencies only for sequences longer than
    ``max_position_embeddings``, which this engine never runs, so it is plain RoPE here."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    kind = (scaling or {}).get("rope_type", "default")
    if kind == "linear":
        return inv_freq / scaling["factor"]
    if kind == "llama3":
        # Llama 3.1: keep high frequencies, divide low ones by `factor`, blend smoothly in between.
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        smooth = (old_len / wavelen - low) / (high - low)
        blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        is_medium = (wavelen >= old_len / high) & (wavelen <= old_len / low)
        return torch.where(is_medium, blended, scaled)
    if kind == "yarn":
        # YaRN: dims that turn fewer than beta_slow times over the original context are divided by `factor`,
        # dims that turn more than beta_fast times are kept, with a linear ramp between the two.
        old_len, factor = scaling["original_max_position_embeddings"], scaling["factor"]
        fast, slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1

        def dim_of(rotations: float) -> float:  # the dim index that turns `rotations` times over old_len
            return head_dim * math.log(old_len / (rotations * 2 * math.pi)) / (2 * math.log(theta))

        low, high = dim_of(fast), dim_of(slow)
        if scaling.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, head_dim - 1)
        ramp = ((torch.arange(head_dim // 2, dtype=torch.float32) - low) / ((high - low) or 0.001)).clamp(0, 1)
        return inv_freq / factor * ramp + inv_freq * (1 - ramp)
    return inv_freq


def rope_attention_factor(scaling: dict[str, Any] | None) -> float:
    """What cos and sin are multiplied by: 1, except for yarn (``0.1 * ln(factor) + 1`` unless given)."""
    if (scaling or {}).get("rope_type") != "yarn":
        return 1.0
    if scaling.get("attention_factor") is not None:
        return float(scaling["attention_factor"])

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    factor, m, m_all = scaling["factor"], scaling.get("mscale"), scaling.get("mscale_all_dim")
    return mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)


def rope_cos_sin_cache(head_dim: int, max_positions: int, theta: float,
                       scaling: dict[str, Any] | None = None) -> torch.Tensor:
    """``[max_positions, head_dim]`` fp32: ``cos(p * f)`` in the first half, ``sin(p * f)`` in the second
    (both times :func:`rope_attention_factor`). Exercise 203 has this contract."""
    if head_dim % 2:
        raise ValueError(f"RoPE rotates pairs of dimensions: head_dim must be even, got {head_dim}")
    freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), rope_inv_freq(head_dim, theta, scaling))
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1) * rope_attention_factor(scaling)


@CustomOp.register("rotary_embedding")
class RotaryEmbedding(CustomOp):
    """RoPE over ``head_dim`` dims: neox style (rotate the two halves of each head), as Llama and Qwen use, or
    interleaved pairs ``(x0, x1), (x2, x3), ...`` (``is_neox_style=False``), as DeepSeek's rotary key part does."""

    def __init__(self, head_dim: int, max_positions: int, theta: float, scaling: dict[str, Any] | None,
                 is_neox_style: bool = True) -> None:
        super().__init__()
        self.head_dim, self.is_neox_style = head_dim, is_neox_style
        self.register_buffer("cos_sin_cache", rope_cos_sin_cache(head_dim, max_positions, theta, scaling),
                             persistent=False)

    def forward_native(self, positions: torch.Tensor, q: torch.Tensor,
                       k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return ops.rotary_embedding(positions, q, k, self.head_dim, self.cos_sin_cache, self.is_neox_style)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, layer_idx: int, rotary: RotaryEmbedding, dtype: torch.dtype) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        tp = get_tp_group()
        # sharding.head_shard / vocab_range are looked up on their module at call time, so a replacement set
        # there (exercises 250 and 253, `practice/judge.py engine`) takes effect.
        self.num_heads, self.num_kv_heads, q_start, kv_start, _ = sharding.head_shard(
            config.num_attention_heads, config.num_key_value_heads, tp.world_size, tp.rank_in_group)
        self.head_dim = hd = config.head_dim
        q_rows, kv_rows = self.num_heads * hd, self.num_kv_heads * hd
        self.qkv_proj = MergedLinear(
            config.hidden_size, {"q_proj": q_rows, "k_proj": kv_rows, "v_proj": kv_rows}, config.qkv_bias, dtype,
            shards={"q_proj": Shard(0, q_start * hd, config.q_size),
                    "k_proj": Shard(0, kv_start * hd, config.kv_size),
                    "v_proj": Shard(0, kv_start * hd, config.kv_size)})
        self.o_proj = RowParallelLinear(config.q_size, config.hidden_size, config.o_proj_bias, dtype)
        self.rotary_emb = rotary
        self.qkv_sizes = [q_rows, kv_rows, kv_rows]
        # Qwen3: each head of q and k is RMS-normed (one weight of head_dim values each) before RoPE.
        self.q_norm = RMSNorm(hd, config.rms_norm_eps, dtype) if config.qk_norm else None
        self.k_norm = RMSNorm(hd, config.rms_norm_eps, dtype) if config.qk_norm else None

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor, attention: AttentionFn) -> torch.Tensor:
        q, k, v = self.qkv_proj(hidden).split_with_sizes(self.qkv_sizes, dim=-1)
        t = hidden.shape[0]
        if self.q_norm is not None:
            q = self.q_norm(q.reshape(t, self.num_heads, self.head_dim)).view(t, -1)
            k = self.k_norm(k.reshape(t, self.num_kv_heads, self.head_dim)).view(t, -1)
        q, k = self.rotary_emb(positions, q, k)
        out = attention(self.layer_idx, q.view(t, self.num_heads, self.head_dim),
                        k.view(t, self.num_kv_heads, self.head_dim),
                        v.contiguous().view(t, self.num_kv_heads, self.head_dim))
        return self.o_proj(out.reshape(t, self.num_heads * self.head_dim))


class SiluAndMulMLP(nn.Module):
    def __init__(self, config: ModelConfig, dtype: torch.dtype, intermediate_size: int | None = None) -> None:
        super().__init__()
        tp = get_tp_group()
        size = intermediate_size or config.intermediate_size
        rows = divide(size, tp.world_size, "intermediate_size")
        shard = Shard(0, tp.rank_in_group * rows, size)
        self.gate_up_proj = MergedLinear(config.hidden_size, {"gate_proj": rows, "up_proj": rows},
                                         config.mlp_bias, dtype, shards={"gate_proj": shard, "up_proj": shard})
        self.down_proj = RowParallelLinear(size, config.hidden_size, config.mlp_bias, dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(ops.silu_and_mul(self.gate_up_proj(x)))


class DecoderLayer(nn.Module):
    """Pre-norm block: ``h += attn(norm(h)); h += mlp(norm(h))``, with the adds fused into the norms.

    ``mlp`` defaults to the dense :class:`SiluAndMulMLP`; an MoE model passes its expert block and the name
    the checkpoint gives it (``mlp_name``, e.g. Mixtral's ``block_sparse_moe``). ``self_attn`` defaults to
    :class:`Attention`; DeepSeek passes its latent attention (``model/mla.py``)."""

    def __init__(self, config: ModelConfig, layer_idx: int, rotary: RotaryEmbedding, dtype: torch.dtype,
                 mlp: nn.Module | None = None, mlp_name: str = "mlp", self_attn: nn.Module | None = None) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype)
        self.self_attn = self_attn if self_attn is not None else Attention(config, layer_idx, rotary, dtype)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype)
        self.mlp_name = mlp_name
        self.add_module(mlp_name, mlp if mlp is not None else SiluAndMulMLP(config, dtype))

    def forward(self, positions: torch.Tensor, hidden: torch.Tensor, residual: torch.Tensor | None,
                attention: AttentionFn) -> tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            residual, hidden = hidden, self.input_layernorm(hidden)
        else:
            hidden, residual = self.input_layernorm(hidden, residual)
        hidden = self.self_attn(positions, hidden, attention)
        hidden, residual = self.post_attention_layernorm(hidden, residual)
        return getattr(self, self.mlp_name)(hidden), residual
