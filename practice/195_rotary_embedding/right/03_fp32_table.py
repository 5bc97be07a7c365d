# Correct: builds the cos/sin table in fp32 arithmetic (1 / base**(arange/rot_dim), einsum for the angles) instead of fp64 then fp32; the rotation as in solution.py.
"""Exercise 195 (a correct alternative): rotary position embedding from a [max_pos, rot_dim] cos/sin cache."""
from __future__ import annotations

import torch


def build_cos_sin_cache(max_pos: int, rot_dim: int, base: float) -> torch.Tensor:
    """Built in fp32 throughout, as vLLM's RotaryEmbedding._compute_cos_sin_cache does."""
    if rot_dim % 2 != 0:
        raise ValueError(f"rot_dim {rot_dim} is odd")
    inv_freq = 1.0 / (base ** (torch.arange(0, rot_dim, 2, dtype=torch.float32) / rot_dim))
    t = torch.arange(max_pos, dtype=torch.float32)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, head_size: int, neox: bool) -> torch.Tensor:
    rot_dim = 2 * cos.shape[-1]
    heads = x.float().reshape(x.shape[0], -1, head_size)
    rot, rest = heads[..., :rot_dim], heads[..., rot_dim:]
    if neox:
        a, b = rot[..., : rot_dim // 2], rot[..., rot_dim // 2:]
    else:
        a, b = rot[..., 0::2], rot[..., 1::2]
    ra, rb = a * cos - b * sin, b * cos + a * sin
    rotated = torch.cat((ra, rb), -1) if neox else torch.stack((ra, rb), -1).flatten(-2)
    return torch.cat((rotated, rest), -1).reshape(x.shape).to(x.dtype)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotated copies of query [T, nh*hd] and key [T, nkv*hd]; only the first rot_dim dims of each head rotate."""
    rot_dim = cos_sin_cache.shape[-1]
    if rot_dim > head_size:
        raise ValueError(f"rot_dim {rot_dim} exceeds head_size {head_size}")
    for name, t in (("query", query), ("key", key)):
        if t.shape[-1] % head_size:
            raise ValueError(f"{name}'s last dim {t.shape[-1]} is not a multiple of head_size {head_size}")
    cos, sin = cos_sin_cache[positions].float().chunk(2, dim=-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    return (_rotate(query, cos, sin, head_size, is_neox_style),
            _rotate(key, cos, sin, head_size, is_neox_style))
