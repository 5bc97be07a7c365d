# Correct: always goes through the engine's rope_inv_freq and rope_attention_factor (which give plain RoPE and 1.0 for scaling=None, the same bits); apply_rope multiplies complex64 numbers by cos + i*sin.
from __future__ import annotations

import torch

from mini_platform.model.layers import rope_attention_factor, rope_inv_freq


def rope_cos_sin_cache(head_dim, max_positions, theta, scaling=None):
    if head_dim % 2 == 1:
        raise ValueError("odd head_dim: RoPE rotates pairs of dims")
    inv_freq = rope_inv_freq(head_dim, theta, scaling)
    angles = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=1) * rope_attention_factor(scaling)


def apply_rope(x, positions, cache, neox=True):
    head_dim = x.shape[-1]
    half = head_dim // 2
    picked = cache[positions.long()].float()
    rotation = torch.complex(picked[:, :half], picked[:, half:]).unsqueeze(1)     # [T, 1, d/2]
    xf = x.float()
    if neox:
        z = torch.complex(xf[..., :half].contiguous(), xf[..., half:].contiguous()) * rotation
        out = torch.cat([z.real, z.imag], dim=-1)
    else:
        z = torch.view_as_complex(xf.reshape(*xf.shape[:-1], half, 2).contiguous()) * rotation
        out = torch.view_as_real(z).reshape(xf.shape)
    return out.to(x.dtype)
