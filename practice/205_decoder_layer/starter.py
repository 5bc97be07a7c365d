"""Exercise 205: a whole Llama/Qwen2 decoder layer (prefill, no KV cache).

Fill in the TODO. Helper functions of your own are welcome.
"""
from __future__ import annotations

import torch

from mini_platform.model.layers import AttentionFn


def decoder_layer(hidden: torch.Tensor, positions: torch.Tensor, weights: dict[str, torch.Tensor],
                  config: dict) -> torch.Tensor:
    """hidden [T, H] -> the layer's output [T, H] (see the statement for the formula).

    weights: "input_layernorm.weight", "self_attn.{q,k,v,o}_proj.weight" (+ optional q/k/v ".bias"),
    "post_attention_layernorm.weight", "mlp.{gate,up,down}_proj.weight".
    config: num_attention_heads, num_key_value_heads, head_dim, rms_norm_eps, rope_theta.
    """
    raise NotImplementedError("TODO: implement decoder_layer")


def forward(self, positions: torch.Tensor, hidden: torch.Tensor, residual: torch.Tensor | None,
            attention: AttentionFn) -> tuple[torch.Tensor, torch.Tensor]:
    """The engine's DecoderLayer.forward (``self`` is a mini_platform DecoderLayer).

    residual None (the first layer): the input is the residual. Otherwise the previous layer's add is
    fused into input_layernorm(hidden, residual). Returns (mlp output, residual), the MLP being
    getattr(self, self.mlp_name); the layer's output is their sum.
    """
    raise NotImplementedError("TODO: implement forward")
