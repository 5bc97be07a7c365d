"""The reference KV cache and greedy generation: the baseline the paged engine must reproduce.

:class:`ContiguousAttention` implements the model's attention protocol for ONE sequence with plain
per-layer tensors ``[max_len, nkv, hd]``: each call appends the new tokens' K/V after the ones already
stored and attends causally over everything so far. It is deliberately simple (no blocks, no batching,
plain torch instead of kernels), so that it can serve as the specification of attention.
"""
from __future__ import annotations

import torch

from .llama import CausalLM
from .mla import expand_latents


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int,
                     scale: float | None = None) -> torch.Tensor:
    """Softmax attention of ``q`` ``[T, nh, hd]`` over ``k`` ``[L, nkv, hd]`` and ``v`` ``[L, nkv, dv]``; query ``i``
    sits at position ``offset + i`` and sees keys ``0 .. offset + i``. Grouped-query: head ``h`` reads kv head
    ``h // (nh // nkv)``. Scale ``hd ** -0.5`` unless given; softmax in fp32; returns q's dtype."""
    t, nh, hd = q.shape
    group = nh // k.shape[1]
    k = k.repeat_interleave(group, dim=1).transpose(0, 1)   # [nh, L, hd]
    v = v.repeat_interleave(group, dim=1).transpose(0, 1)
    scores = torch.matmul(q.transpose(0, 1), k.transpose(1, 2)) * (hd ** -0.5 if scale is None else scale)
    query_pos = torch.arange(offset, offset + t, device=q.device)[:, None]
    key_pos = torch.arange(k.shape[1], device=q.device)[None, :]
    scores = scores.masked_fill(key_pos > query_pos, float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(probs, v).transpose(0, 1)   # [T, nh, hd]


class ContiguousAttention:
    """Per-layer contiguous K/V tensors for one sequence; an ``attention(layer_idx, q, k, v)`` callable.

    For latent attention (DeepSeek, :meth:`mla`) the two tensors hold the latent ``[max_len, 1, L]`` and the rotary
    key ``[max_len, 1, R]`` instead (``value_dim`` gives the second one's last dim), and attention is computed in
    the expanded form, the plainest one."""

    def __init__(self, num_layers: int, max_len: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu",
                 value_dim: int | None = None) -> None:
        def zeros(dim: int) -> list[torch.Tensor]:
            return [torch.zeros(max_len, num_kv_heads, dim, dtype=dtype, device=device) for _ in range(num_layers)]
        self.key_cache, self.value_cache = zeros(head_dim), zeros(value_dim or head_dim)
        self.lengths = [0] * num_layers
        self.max_len = max_len

    @classmethod
    def for_model(cls, model: CausalLM, max_len: int) -> "ContiguousAttention":
        c = model.config
        if c.mla is not None:
            return cls(c.num_hidden_layers, max_len, 1, c.mla.kv_lora_rank, model.dtype, model.device,
                       value_dim=c.mla.qk_rope_head_dim)
        return cls(c.num_hidden_layers, max_len, c.num_key_value_heads, c.head_dim, model.dtype, model.device)

    def _append(self, layer_idx: int, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int]:
        start = self.lengths[layer_idx]
        end = start + k.shape[0]
        if end > self.max_len:
            raise ValueError(f"KV cache of layer {layer_idx} holds {self.max_len} tokens; "
                             f"cannot append {k.shape[0]} after {start}")
        self.key_cache[layer_idx][start:end] = k
        self.value_cache[layer_idx][start:end] = v
        self.lengths[layer_idx] = end
        return start, end

    def __call__(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        start, end = self._append(layer_idx, k, v)
        return causal_attention(q, self.key_cache[layer_idx][:end], self.value_cache[layer_idx][:end], start)

    def mla(self, layer_idx: int, q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor,
            w_uk: torch.Tensor, w_uv: torch.Tensor, scale: float) -> torch.Tensor:
        """Latent attention, expanded: every cached latent becomes each head's key (``W_UK c`` beside the shared
        rotary key) and value (``W_UV c``). Returns ``[T, nh, dv]``."""
        start, end = self._append(layer_idx, kv_c.unsqueeze(1), k_pe.unsqueeze(1))
        c, pe = self.key_cache[layer_idx][:end, 0], self.value_cache[layer_idx][:end, 0]
        keys, values = expand_latents(c, pe, w_uk, w_uv)
        return causal_attention(torch.cat((q_nope, q_pe), dim=-1), keys, values, start, scale)


@torch.inference_mode()
def greedy_generate(model: CausalLM, prompt_ids: list[int], max_new_tokens: int,
                    ignore_eos: bool = False) -> list[int]:
    """Greedy decoding: prefill the whole prompt, then one token per step. Returns the new token ids,
    stopping after ``max_new_tokens`` or after an EOS token (kept in the output) unless ``ignore_eos``."""
    config = model.config
    if not prompt_ids:
        raise ValueError("the prompt is empty; give at least one token id")
    bad = [t for t in prompt_ids if not 0 <= t < config.vocab_size]
    if bad:
        raise ValueError(f"token id(s) {bad[:5]} out of range for vocab_size={config.vocab_size}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    total = len(prompt_ids) + max_new_tokens
    if total > config.max_position_embeddings:
        raise ValueError(f"prompt ({len(prompt_ids)}) + max_new_tokens ({max_new_tokens}) exceeds the model's "
                         f"context of max_position_embeddings={config.max_position_embeddings}")
    attention = ContiguousAttention.for_model(model, total)
    ids = torch.tensor(prompt_ids, dtype=torch.long, device=model.device)
    positions = torch.arange(len(prompt_ids), device=model.device)
    out: list[int] = []
    while len(out) < max_new_tokens:
        hidden = model(ids, positions, attention)
        token = int(model.compute_logits(hidden[-1:]).argmax(dim=-1))
        out.append(token)
        if not ignore_eos and token in config.eos_token_ids:
            break
        ids = torch.tensor([token], device=model.device)
        positions = positions[-1:] + 1
    return out
