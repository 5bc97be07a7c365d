# Correct: torch.nn.functional.rms_norm and scaled_dot_product_attention(is_causal=True) on KV heads expanded with expand/reshape, interleaving of the RoPE halves written with torch.stack; forward keeps the residual stream in a local named `stream`.
from __future__ import annotations

import torch
import torch.nn.functional as F


def decoder_layer(hidden, positions, weights, config):
    t, width = hidden.shape
    nh, nkv, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    eps, theta = config["rms_norm_eps"], config["rope_theta"]
    w = weights.get

    def lin(x, name):
        return F.linear(x, weights[name + ".weight"], w(name + ".bias"))

    def rope(x):
        half = hd // 2
        inv = 1.0 / theta ** (torch.arange(half, dtype=torch.float32) * 2 / hd)
        ang = torch.outer(positions.float(), inv).unsqueeze(1)
        a, b = x[..., :half], x[..., half:]
        c, s = torch.cos(ang), torch.sin(ang)
        return torch.stack([a * c - b * s, b * c + a * s], dim=-2).reshape(x.shape)

    n1 = F.rms_norm(hidden, (width,), weights["input_layernorm.weight"], eps)
    q = rope(lin(n1, "self_attn.q_proj").view(t, nh, hd)).transpose(0, 1)
    k = rope(lin(n1, "self_attn.k_proj").view(t, nkv, hd)).transpose(0, 1)
    v = lin(n1, "self_attn.v_proj").view(t, nkv, hd).transpose(0, 1)
    g = nh // nkv
    k = k[:, None].expand(nkv, g, t, hd).reshape(nh, t, hd)
    v = v[:, None].expand(nkv, g, t, hd).reshape(nh, t, hd)
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=hd ** -0.5)
    h = hidden + lin(attn.transpose(0, 1).reshape(t, nh * hd), "self_attn.o_proj")
    n2 = F.rms_norm(h, (width,), weights["post_attention_layernorm.weight"], eps)
    return h + lin(F.silu(lin(n2, "mlp.gate_proj")) * lin(n2, "mlp.up_proj"), "mlp.down_proj")


def forward(self, positions, hidden, residual, attention):
    if residual is None:
        stream = hidden
        x = self.input_layernorm(stream)
    else:
        x, stream = self.input_layernorm(hidden, residual)
    x = self.self_attn(positions, x, attention)
    x, stream = self.post_attention_layernorm(x, stream)
    return getattr(self, self.mlp_name)(x), stream
