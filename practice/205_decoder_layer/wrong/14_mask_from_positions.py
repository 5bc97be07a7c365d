# Mistake: Builds the causal mask from the positions (key j visible when positions[j] <= positions[i]) instead of the row order the statement prescribes.
"""Exercise 205 (reference): a whole Llama/Qwen2 decoder layer (prefill, no KV cache)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from mini_platform.model.layers import AttentionFn


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Neox-style rotation of x [T, heads, hd]."""
    hd = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    angles = positions.float()[:, None, None] * inv_freq          # [T, 1, hd/2]
    cos, sin = angles.cos(), angles.sin()
    a, b = x.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)


def decoder_layer(hidden: torch.Tensor, positions: torch.Tensor, weights: dict[str, torch.Tensor],
                  config: dict) -> torch.Tensor:
    """hidden [T, H] -> the layer's output [T, H]."""
    t = hidden.shape[0]
    nh, nkv, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    eps = config["rms_norm_eps"]

    def proj(name: str, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, weights[f"{name}.weight"], weights.get(f"{name}.bias"))

    n1 = rms_norm(hidden, weights["input_layernorm.weight"], eps)
    q = rope(proj("self_attn.q_proj", n1).view(t, nh, hd), positions, config["rope_theta"])
    k = rope(proj("self_attn.k_proj", n1).view(t, nkv, hd), positions, config["rope_theta"])
    v = proj("self_attn.v_proj", n1).view(t, nkv, hd)
    k, v = (x.repeat_interleave(nh // nkv, dim=1).transpose(0, 1) for x in (k, v))   # [nh, T, hd]
    scores = q.transpose(0, 1) @ k.transpose(1, 2) * hd ** -0.5
    scores = scores.masked_fill(positions[None, :] > positions[:, None], float("-inf"))
    attn = (scores.softmax(-1) @ v).transpose(0, 1).reshape(t, nh * hd)
    h = hidden + proj("self_attn.o_proj", attn)
    n2 = rms_norm(h, weights["post_attention_layernorm.weight"], eps)
    return h + proj("mlp.down_proj", F.silu(proj("mlp.gate_proj", n2)) * proj("mlp.up_proj", n2))


def forward(self, positions: torch.Tensor, hidden: torch.Tensor, residual: torch.Tensor | None,
            attention: AttentionFn) -> tuple[torch.Tensor, torch.Tensor]:
    """The engine's DecoderLayer.forward: returns (mlp output, residual); the layer's output is their sum."""
    if residual is None:            # the first layer: the input itself is the residual stream
        residual, hidden = hidden, self.input_layernorm(hidden)
    else:                           # the previous layer's add, fused into this norm
        hidden, residual = self.input_layernorm(hidden, residual)
    hidden = self.self_attn(positions, hidden, attention)
    hidden, residual = self.post_attention_layernorm(hidden, residual)
    return getattr(self, self.mlp_name)(hidden), residual
