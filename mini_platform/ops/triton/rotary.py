"""Rotary embedding as a Triton kernel: one program rotates every head of one token.

The wrapper copies ``query`` and ``key`` (the public kernel is out of place) and the kernel rotates
the copies in place, one launch for the query heads and one for the key heads. A program loads the
token's position, its ``rot_dim/2`` cos and sin values, and a ``[BLOCK_HEADS, BLOCK_HALF]`` tile of
rotation pairs: ``(j, j + rot_dim/2)`` in neox style, ``(2j, 2j + 1)`` in the interleaved (GPT-J)
style. Dims past ``rot_dim`` are left as copied (partial rotary).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..cpu.rotary import check_rotary_args


@triton.jit
def _rotary_kernel(positions_ptr, x_ptr, cache_ptr, x_token_stride, cache_pos_stride,
                   num_heads, head_size, half_rot,
                   IS_NEOX: tl.constexpr, BLOCK_HEADS: tl.constexpr, BLOCK_HALF: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)  # token * stride can pass 2**31 elements
    pos = tl.load(positions_ptr + token).to(tl.int64)
    j = tl.arange(0, BLOCK_HALF)
    j_mask = j < half_rot
    cos = tl.load(cache_ptr + pos * cache_pos_stride + j, mask=j_mask, other=0.0).to(tl.float32)
    sin = tl.load(cache_ptr + pos * cache_pos_stride + half_rot + j, mask=j_mask, other=0.0).to(tl.float32)
    heads = tl.arange(0, BLOCK_HEADS)
    mask = (heads[:, None] < num_heads) & j_mask[None, :]
    base = x_ptr + token * x_token_stride + heads[:, None] * head_size
    if IS_NEOX:
        off1 = j[None, :]
        off2 = j[None, :] + half_rot
    else:
        off1 = 2 * j[None, :]
        off2 = 2 * j[None, :] + 1
    x1 = tl.load(base + off1, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(base + off2, mask=mask, other=0.0).to(tl.float32)
    out_ty = x_ptr.dtype.element_ty
    tl.store(base + off1, (x1 * cos[None, :] - x2 * sin[None, :]).to(out_ty), mask=mask)
    tl.store(base + off2, (x2 * cos[None, :] + x1 * sin[None, :]).to(out_ty), mask=mask)


def _rotate_(positions: torch.Tensor, x: torch.Tensor, head_size: int, cache: torch.Tensor,
             is_neox_style: bool) -> None:
    num_heads = x.shape[1] // head_size
    half_rot = cache.shape[1] // 2
    _rotary_kernel[(x.shape[0],)](
        positions, x, cache, x.stride(0), cache.stride(0), num_heads, head_size, half_rot,
        IS_NEOX=is_neox_style, BLOCK_HEADS=triton.next_power_of_2(num_heads),
        BLOCK_HALF=triton.next_power_of_2(half_rot))


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Return rotated copies of ``query`` ``[T, nh*hd]`` and ``key`` ``[T, nkv*hd]`` (see ``mini_platform.ops``)."""
    check_rotary_args(positions, query, key, head_size, cos_sin_cache)
    positions, cache = positions.contiguous(), cos_sin_cache.contiguous()
    query = query.clone(memory_format=torch.contiguous_format)
    key = key.clone(memory_format=torch.contiguous_format)
    _rotate_(positions, query, head_size, cache, is_neox_style)
    _rotate_(positions, key, head_size, cache, is_neox_style)
    return query, key
