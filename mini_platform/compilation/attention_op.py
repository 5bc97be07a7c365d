"""Attention as custom ops: one opaque node in the compiled graph, where the graph is split (vLLM's
``unified_attention_with_output``, registered with ``direct_register_custom_op`` in ``vllm/attention/layer.py``).

Registered with ``torch.library.custom_op`` and a fake implementation, TorchDynamo does not trace into them: it
records one node per layer and learns the output's shape from the fake. The op writes into an ``output`` tensor the
graph allocated before it (``mutates_args``), so the piece after it reads attention's result from memory the piece
before it owns: at replay the address is the one captured. At run time the op reads the step's attention (its
metadata and caches) from the forward context and attends over the step's real tokens only; padding rows get 0.

:class:`OpaqueAttention` is the ``attention`` callable the model is given when it is compiled: the model calls
``attention(layer_idx, q, k, v)`` (or ``attention.mla(...)``) as always and knows nothing of this.
"""
from __future__ import annotations

import torch

from .forward_context import get_forward_context


@torch.library.custom_op("mini_platform::unified_attention_with_output", mutates_args=("output",))
def unified_attention_with_output(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, output: torch.Tensor,
                                  layer_idx: int) -> None:
    context = get_forward_context()
    n = context.num_actual_tokens
    if n:
        output[:n].copy_(context.attention(layer_idx, query[:n], key[:n], value[:n]))
    output[n:].zero_()


@unified_attention_with_output.register_fake
def _(query, key, value, output, layer_idx):
    return None


@torch.library.custom_op("mini_platform::unified_mla_attention_with_output", mutates_args=("output",))
def unified_mla_attention_with_output(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor,
                                      w_uk: torch.Tensor, w_uv: torch.Tensor, output: torch.Tensor, layer_idx: int,
                                      scale: float) -> None:
    context = get_forward_context()
    n = context.num_actual_tokens
    if n:
        output[:n].copy_(context.attention.mla(layer_idx, q_nope[:n], q_pe[:n], kv_c[:n], k_pe[:n], w_uk, w_uv, scale))
    output[n:].zero_()


@unified_mla_attention_with_output.register_fake
def _(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv, output, layer_idx, scale):
    return None


class OpaqueAttention:
    """The attention callable of a compiled model: each call is one custom-op node (a splitting point)."""

    def __call__(self, layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        output = q.new_empty(q.shape[0], q.shape[1], v.shape[2])
        torch.ops.mini_platform.unified_attention_with_output(q, k, v, output, layer_idx)
        return output

    def mla(self, layer_idx: int, q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor,
            w_uk: torch.Tensor, w_uv: torch.Tensor, scale: float) -> torch.Tensor:
        output = q_nope.new_empty(q_nope.shape[0], q_nope.shape[1], w_uv.shape[1])  # [T, nh, dv]
        torch.ops.mini_platform.unified_mla_attention_with_output(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv, output,
                                                                  layer_idx, scale)
        return output
