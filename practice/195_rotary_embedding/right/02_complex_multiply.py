# Correct: rotates pairs as complex numbers (torch.complex / view_as_real) in fp32, the table built with math.cos/math.sin in Python lists, the shape checks in a loop over both tensors after the rot_dim check.
from __future__ import annotations

import math

import torch


def build_cos_sin_cache(max_pos, rot_dim, base):
    if rot_dim & 1:
        raise ValueError(f"odd rot_dim {rot_dim}")
    thetas = [base ** (-2.0 * i / rot_dim) for i in range(rot_dim // 2)]
    rows = [[math.cos(p * t) for t in thetas] + [math.sin(p * t) for t in thetas] for p in range(max_pos)]
    return torch.tensor(rows, dtype=torch.float32).reshape(max_pos, rot_dim)


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style):
    rot_dim = int(cos_sin_cache.shape[1])
    if rot_dim > head_size:
        raise ValueError("rot_dim larger than head_size")
    for t in (query, key):
        if t.shape[-1] % head_size:
            raise ValueError(f"width {t.shape[-1]} not divisible by head_size {head_size}")
    half = rot_dim // 2
    rows = cos_sin_cache[positions].float()
    turn = torch.complex(rows[:, :half], rows[:, half:])[:, None, :]   # cos + i sin

    def apply(x):
        h = x.float().reshape(x.shape[0], -1, head_size)
        r = h[..., :rot_dim]
        if is_neox_style:
            z = torch.complex(r[..., :half].contiguous(), r[..., half:].contiguous()) * turn
            new = torch.cat([z.real, z.imag], dim=-1)
        else:
            z = torch.view_as_complex(r.reshape(*r.shape[:-1], half, 2).contiguous()) * turn
            new = torch.view_as_real(z).flatten(-2)
        return torch.cat([new, h[..., rot_dim:]], dim=-1).reshape(x.shape).to(x.dtype)

    return apply(query), apply(key)
