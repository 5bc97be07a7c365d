"""The reference KV cache and greedy generation: the baseline the paged engine must reproduce.

:class:`ContiguousAttention` implements the model's attention protocol for ONE sequence with plain
per-layer tensors ``[max_len, nkv, hd]``: each call appends the new tokens' K/V after the ones already
stored and attends causally over everything so far. It is deliberately simple (no blocks, no batching,
plain torch instead of kernels), so that it can serve as the specification of attention.
"""
from __future__ import annotations

import torch

from .llama import CausalLM


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int) -> torch.Tensor:
    """Softmax attention of ``q`` ``[T, nh, hd]`` over ``k, v`` ``[L, nkv, hd]``; query ``i`` sits at
    position ``offset + i`` and sees keys ``0 .. offset + i``. Grouped-query: head ``h`` reads kv head
    ``h // (nh // nkv)``. Scale ``hd ** -0.5``; softmax in fp32; returns q's dtype."""
    t, nh, hd = q.shape
    group = nh // k.shape[1]
    k = k.repeat_interleave(group, dim=1).transpose(0, 1)   # [nh, L, hd]
    v = v.repeat_interleave(group, dim=1).transpose(0, 1)
    scores = torch.matmul(q.transpose(0, 1), k.transpose(1, 2)) * hd ** -0.5   # [nh, T, L]
    query_pos = torch.arange(offset, offset + t, device=q.device)[:, None]
    key_pos = torch.arange(k.shape[1], device=q.device)[None, :]
    scores = scores.masked_fill(key_pos > query_pos, float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.matmul(probs, v).transpose(0, 1)   # [T, nh, hd]


class ContiguousAttention:
    """Per-layer contiguous K/V tensors for one sequence; an ``attention(layer_idx, q, k, v)`` callable."""

    def __init__(self, num_layers: int, max_len: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> None:
        shape = (max_len, num_kv_heads, head_dim)
        self.key_cache = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.value_cache = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.lengths = [0] * num_layers
        self.max_len = max_len

    @classmethod
    def for_model(cls, model: CausalLM, max_len: int) -> "ContiguousAttention":
        c = model.config
        return cls(c.num_hidden_layers, max_len, c.num_key_value_heads, c.head_dim, model.dtype, model.device)

    def __call__(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        start = self.lengths[layer_idx]
        end = start + q.shape[0]
        if end > self.max_len:
            raise ValueError(f"KV cache of layer {layer_idx} holds {self.max_len} tokens; "
                             f"cannot append {q.shape[0]} after {start}")
        self.key_cache[layer_idx][start:end] = k
        self.value_cache[layer_idx][start:end] = v
        self.lengths[layer_idx] = end
        return causal_attention(q, self.key_cache[layer_idx][:end], self.value_cache[layer_idx][:end], start)


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
