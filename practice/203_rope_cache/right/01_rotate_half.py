# Correct: the table filled through slices of an empty tensor with a broadcast product for the angles; apply_rope the Hugging Face way, x * cos + rotate_half(x) * sin on full-width cos/sin (repeat_interleave and an every-two rotation for the interleaved style).
from __future__ import annotations

import torch

from mini_platform.model.layers import rope_attention_factor, rope_inv_freq


def rope_cos_sin_cache(head_dim, max_positions, theta, scaling=None):
    if head_dim % 2 != 0:
        raise ValueError(f"RoPE needs an even head_dim (got {head_dim})")
    half = head_dim // 2
    if scaling is not None:
        inv_freq = rope_inv_freq(head_dim, theta, scaling)
    else:
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.arange(max_positions).float()[:, None] * inv_freq[None, :]
    table = torch.empty(max_positions, head_dim, dtype=torch.float32)
    table[:, :half] = torch.cos(angles)
    table[:, half:] = torch.sin(angles)
    if scaling is not None:
        table = table * rope_attention_factor(scaling)
    return table


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rotate_every_two(x):
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).reshape(x.shape)


def apply_rope(x, positions, cache, neox=True):
    half = cache.shape[-1] // 2
    rows = cache.index_select(0, positions.to(torch.long)).to(torch.float32)
    cos, sin = rows[:, :half], rows[:, half:]
    xf = x.to(torch.float32)
    if neox:
        cos_full, sin_full = torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)
        out = xf * cos_full.unsqueeze(1) + _rotate_half(xf) * sin_full.unsqueeze(1)
    else:
        cos_full, sin_full = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
        out = xf * cos_full.unsqueeze(1) + _rotate_every_two(xf) * sin_full.unsqueeze(1)
    return out.to(dtype=x.dtype)
