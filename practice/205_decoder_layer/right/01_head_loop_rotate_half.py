# Correct: explicit x @ W.T with the bias added only when its key is present, RoPE as x*cos + rotate_half(x)*sin, attention looped per query head; forward names its intermediates and normalises the first layer's input before keeping it as the residual.
from __future__ import annotations

import torch


def _linear(weights, name, x):
    y = x @ weights[name + ".weight"].T
    if name + ".bias" in weights:
        y = y + weights[name + ".bias"]
    return y


def _rms(x, w, eps):
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def _rope(x, positions, theta):
    d = x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float32)
    freq = theta ** (-2 * i / d)
    ang = positions.to(torch.float32)[:, None] * freq[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
    rotated = torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rotated * sin


def decoder_layer(hidden, positions, weights, config):
    T = hidden.shape[0]
    heads, kv_heads, dim = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    group = heads // kv_heads
    n1 = _rms(hidden, weights["input_layernorm.weight"], config["rms_norm_eps"])
    q = _rope(_linear(weights, "self_attn.q_proj", n1).reshape(T, heads, dim), positions, config["rope_theta"])
    k = _rope(_linear(weights, "self_attn.k_proj", n1).reshape(T, kv_heads, dim), positions, config["rope_theta"])
    v = _linear(weights, "self_attn.v_proj", n1).reshape(T, kv_heads, dim)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    heads_out = []
    for h in range(heads):
        s = (q[:, h] @ k[:, h // group].T) * dim ** -0.5
        s = s.masked_fill(future, float("-inf"))
        heads_out.append(torch.softmax(s, dim=-1) @ v[:, h // group])
    attn = torch.stack(heads_out, dim=1).reshape(T, heads * dim)
    h_res = hidden + _linear(weights, "self_attn.o_proj", attn)
    n2 = _rms(h_res, weights["post_attention_layernorm.weight"], config["rms_norm_eps"])
    act = torch.sigmoid(_linear(weights, "mlp.gate_proj", n2))
    mlp = _linear(weights, "mlp.down_proj", _linear(weights, "mlp.gate_proj", n2) * act * _linear(weights, "mlp.up_proj", n2))
    return h_res + mlp


def forward(self, positions, hidden, residual, attention):
    if residual is not None:
        normed, residual = self.input_layernorm(hidden, residual)
    else:
        normed = self.input_layernorm(hidden)
        residual = hidden
    attn_out = self.self_attn(positions, normed, attention)
    mlp_in, residual = self.post_attention_layernorm(attn_out, residual)
    mlp = getattr(self, self.mlp_name)
    return mlp(mlp_in), residual
