# Correct: the HF-style rotate_half formulation x*cos + rotate_half(x)*sin with cos/sin repeated to rot_dim (repeat_interleave for the interleaved style), heads handled with view/clone, checks key before query.
from __future__ import annotations

import math

import torch


def build_cos_sin_cache(max_pos, rot_dim, base):
    if rot_dim % 2 != 0:
        raise ValueError("rot_dim has to be even")
    half = rot_dim // 2
    inv_freq = torch.tensor([base ** (-2 * i / rot_dim) for i in range(half)], dtype=torch.float64)
    t = torch.arange(max_pos, dtype=torch.float64)
    freqs = torch.outer(t, inv_freq)
    return torch.cat([torch.cos(freqs), torch.sin(freqs)], dim=1).to(torch.float32)


def _apply(x, cos, sin, head_size, neox):
    T = x.shape[0]
    out = x.to(torch.float32).reshape(T, -1, head_size).clone()
    rot_dim = cos.shape[-1] * 2
    r = out[..., :rot_dim]
    if neox:
        c, s = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        half = rot_dim // 2
        turned = torch.cat([-r[..., half:], r[..., :half]], -1)
    else:
        c, s = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
        turned = torch.stack([-r[..., 1::2], r[..., 0::2]], -1).reshape(r.shape)
    out[..., :rot_dim] = r * c[:, None, :] + turned * s[:, None, :]
    return out.reshape(x.shape).to(x.dtype)


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style):
    rot_dim = cos_sin_cache.shape[-1]
    if key.shape[-1] % head_size != 0 or query.shape[-1] % head_size != 0:
        raise ValueError("query/key widths must be multiples of head_size")
    if rot_dim > head_size:
        raise ValueError(f"cache rot_dim {rot_dim} > head_size {head_size}")
    rows = cos_sin_cache.index_select(0, positions.long()).to(torch.float32)
    cos, sin = rows[:, : rot_dim // 2], rows[:, rot_dim // 2:]
    return _apply(query, cos, sin, head_size, is_neox_style), _apply(key, cos, sin, head_size, is_neox_style)
