"""Rotary position embedding in plain torch: the specification of ``rotary_embedding``."""
from __future__ import annotations

import torch

from . import compiled


def check_rotary_args(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                      cos_sin_cache: torch.Tensor) -> int:
    """Validate the shapes every backend relies on; returns ``rot_dim``."""
    rot_dim = cos_sin_cache.shape[-1]
    if rot_dim % 2 or rot_dim > head_size:
        raise ValueError(f"cos_sin_cache's last dim (rot_dim={rot_dim}) must be even and at most head_size={head_size}")
    for name, t in (("query", query), ("key", key)):
        if t.dim() != 2 or t.shape[-1] % head_size:
            raise ValueError(f"{name} must be [num_tokens, num_heads * head_size] with head_size={head_size}, "
                             f"got shape {tuple(t.shape)}; flatten the head dims first")
    # A kernel reads one position per row: a shorter `positions` would be read past its end on a GPU.
    if positions.shape != (query.shape[0],) or key.shape[0] != query.shape[0]:
        raise ValueError(f"positions must be [num_tokens] with one entry per row of query and key, got positions "
                         f"{tuple(positions.shape)}, query {tuple(query.shape)}, key {tuple(key.shape)}")
    return rot_dim


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, head_size: int,
            is_neox_style: bool) -> torch.Tensor:
    """Rotate the first ``rot_dim`` dims of every head of ``x`` ``[T, n*head_size]``; cos/sin ``[T, rot_dim/2]``."""
    rot_dim = 2 * cos.shape[-1]
    heads = x.float().unflatten(-1, (-1, head_size))
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    rot = heads[..., :rot_dim] if rot_dim < head_size else heads  # partial rotary: the rest passes through
    if is_neox_style:
        x1, x2 = rot.chunk(2, dim=-1)
        rotated = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    else:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        rotated = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
    if rot_dim < head_size:
        rotated = torch.cat((rotated, heads[..., rot_dim:]), dim=-1)
    return rotated.flatten(-2).to(x.dtype)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Return rotated copies of ``query`` ``[T, nh*hd]`` and ``key`` ``[T, nkv*hd]`` (see ``mini_platform.ops``)."""
    check_rotary_args(positions, query, key, head_size, cos_sin_cache)
    if compiled.available_widened(query, key) and compiled.available_widened(cos_sin_cache):
        # fp32 or bf16 with numba: the same arithmetic in one call (bf16 widened, rotated in fp32, rounded once)
        return compiled.rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style)
    cos, sin = cos_sin_cache.index_select(0, positions).float().chunk(2, dim=-1)
    # Query and key side by side: one rotation instead of two.
    both = _rotate(torch.cat((query.float(), key.float()), dim=-1), cos, sin, head_size, is_neox_style)
    q, k = both.split_with_sizes([query.shape[1], key.shape[1]], dim=-1)
    return q.to(query.dtype), k.to(key.dtype)
