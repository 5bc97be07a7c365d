"""``CausalLM``: the Llama decoder, which also serves Qwen2 (Llama plus a bias on Q/K/V), Qwen3 (q/k RMSNorm per
head), the MoE models Mixtral, Qwen2-MoE and Qwen3-MoE (a :class:`~.moe.SparseMoeBlock` in place of the dense MLP on
their sparse layers) and DeepSeek-V2/V3 (latent attention, :class:`~.mla.MLAAttention`, and grouped routing).

Parameter names follow the Hugging Face checkpoint (``model.layers.0.self_attn.o_proj.weight``),
except the merged ``qkv_proj`` and ``gate_up_proj`` (see ``layers.MergedLinear``).
The model knows nothing about KV caches: each layer hands ``q, k, v`` after RoPE to the
``attention`` callable it is given, ``attention(layer_idx, q [T, nh, hd], k [T, nkv, hd], v [T, nkv, hd])
-> [T, nh, hd]``, which stores K/V wherever it keeps them and attends with scale ``hd ** -0.5``.
Under tensor parallelism ``nh`` and ``nkv`` are this rank's heads (see ``layers.Attention``). A DeepSeek layer
calls ``attention.mla(...)`` instead (see :class:`~.mla.MLAAttention`).
"""
from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig
from .layers import AttentionFn, DecoderLayer, RMSNorm, RotaryEmbedding, VocabParallelEmbedding
from .mla import MLAAttention
from .moe import SparseMoeBlock


def decoder_layer(config: ModelConfig, layer_idx: int, rotary: RotaryEmbedding, dtype: torch.dtype,
                  expert_map: torch.Tensor | None) -> DecoderLayer:
    """A dense layer, or an MoE layer (named as the checkpoint names it) when ``config.moe`` makes it sparse;
    with latent attention when ``config.mla`` is set."""
    moe = config.moe
    attn = MLAAttention(config, layer_idx, rotary, dtype) if config.mla is not None else None
    if moe is None or layer_idx not in moe.sparse_layers:
        return DecoderLayer(config, layer_idx, rotary, dtype, self_attn=attn)
    return DecoderLayer(config, layer_idx, rotary, dtype, SparseMoeBlock(config, dtype, expert_map), moe.block_name,
                        self_attn=attn)


class DecoderModel(nn.Module):
    def __init__(self, config: ModelConfig, dtype: torch.dtype, expert_map: torch.Tensor | None = None,
                 max_positions: int | None = None) -> None:
        super().__init__()
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size, dtype)
        # One RoPE table shared by every layer, as long as the longest sequence that will run.
        positions = min(max_positions or config.max_position_embeddings, config.max_position_embeddings)
        neox = config.mla is None or not config.mla.rope_interleave
        self.rotary_emb = rotary = RotaryEmbedding(config.head_dim, positions, config.rope_theta, config.rope_scaling,
                                                   is_neox_style=neox)
        self.layers = nn.ModuleList(decoder_layer(config, i, rotary, dtype, expert_map)
                                    for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, attention: AttentionFn) -> torch.Tensor:
        hidden, residual = self.embed_tokens(input_ids), None
        for layer in self.layers:
            hidden, residual = layer(positions, hidden, residual, attention)
        return self.norm(hidden, residual)[0]


class CausalLM(nn.Module):
    """A decoder-only language model: ``forward`` gives final hidden states, ``compute_logits`` the logits.

    ``expert_map`` (MoE models only; int32 ``[num_experts]``, global id -> local index, -1 = elsewhere) builds
    every MoE layer with only the experts it owns (see :mod:`.moe`). ``max_positions`` (default: the config's
    ``max_position_embeddings``) sizes the RoPE table."""

    def __init__(self, config: ModelConfig, dtype: torch.dtype = torch.float32,
                 expert_map: torch.Tensor | None = None, max_positions: int | None = None) -> None:
        super().__init__()
        if expert_map is not None and config.moe is None:
            raise ValueError(f"expert_map is given but {config.architecture} has no experts")
        self.config = config
        self.model = DecoderModel(config, dtype, expert_map, max_positions)
        self.lm_head = None if config.tie_word_embeddings else VocabParallelEmbedding(
            config.vocab_size, config.hidden_size, dtype)

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype

    @property
    def num_kv_heads(self) -> int:
        """KV heads per layer that this rank's cache holds (all of them without tensor parallelism; 1 for MLA,
        whose latent is shared by every head)."""
        return getattr(self.model.layers[0].self_attn, "num_kv_heads", 1)

    @property
    def device(self) -> torch.device:
        return self.model.embed_tokens.weight.device

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, attention: AttentionFn) -> torch.Tensor:
        """Tokens of one or more sequences packed along T: ids and positions ``[T]`` -> hidden ``[T, H]``."""
        if input_ids.dim() != 1 or positions.shape != input_ids.shape:
            raise ValueError(f"input_ids and positions must both be 1-D [T] (sequences packed along T), got "
                             f"{tuple(input_ids.shape)} and {tuple(positions.shape)}")
        return self.model(input_ids, positions, attention)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``[T, H]`` -> fp32 logits ``[T, V]`` (the embedding matrix when the embeddings are tied)."""
        head = self.model.embed_tokens if self.lm_head is None else self.lm_head
        return head.logits(hidden)
