"""Rotary embedding on Ascend: ``torch_npu._npu_rotary_embedding``, called as vllm-ascend v0.9.1–v0.23 did.

The op works in place on ``query.view(T, -1)`` and ``key.view(T, -1)`` and rotates whole heads, so
this out-of-place kernel rotates contiguous copies. For partial rotary (``rot_dim < head_size``) it
passes only the first ``rot_dim`` dims of each head and concatenates the untouched rest back, the
same slicing as vllm-ascend's ``rope_forward_oot`` (v0.10 and later). vllm-ascend passes its full
``head_size`` there; we pass ``rot_dim``, the width of the rows the op now sees: the ATB Rope op takes
the head width from the cos table and uses ``head_size`` only as the rotation coefficient of the
interleaved style, which must equal that width.

DeepSeek's interleaved rope (``is_neox_style=False`` on whole 64-wide heads, MLA's ``q_pe``/``k_pe``) goes through
``torch_npu.npu_interleave_rope`` instead, as vllm-ascend v0.11.0's ``mla_v1.py rope_single`` does: cos and sin
``[T, 1, 1, 64]`` in halves (``cat(freqs, freqs)``, its ``cos_cached``), ``x`` viewed ``[T, heads, 1, 64]``. The
op returns each head de-interleaved (``x[0::2]`` rotated, then ``x[1::2]`` rotated); vllm-ascend keeps that order
for q and k alike, which leaves the scores unchanged, while this kernel puts the pairs back in place, so that its
output is the contract's.

Beware on real hardware: the op builds its cos/sin tables from the ``cos_sin_cache`` of its *first*
call and keeps them in a C++ static for the life of the process (op-plugin ``RopeAtb.cpp``); a
second model with another RoPE table in the same process silently gets the first table. The CPU
emulation raises in that case instead, and the engine refuses such a model when it is built
(:func:`claim_cos_sin_cache`).
"""
from __future__ import annotations

import importlib
from typing import Any

import torch

from ...ops.cpu.rotary import check_rotary_args

# (the torch_npu module, the first table claimed while it was loaded): the table the op will keep.
_claimed: tuple[Any, torch.Tensor] | None = None


def claim_cos_sin_cache(cos_sin_cache: torch.Tensor) -> None:
    """Reserve the process's rotary table for a model, or refuse it: the op keeps its first table, so a later
    model may only use the same table or a prefix of it (a shorter context). Imports torch_npu."""
    global _claimed
    torch_npu = importlib.import_module("torch_npu")
    if _claimed is None or _claimed[0] is not torch_npu:   # a new (emulated) torch_npu stands for a new process
        _claimed = (torch_npu, cos_sin_cache.detach().clone())
        return
    first, n = _claimed[1], cos_sin_cache.shape[0]
    if (cos_sin_cache.shape[1:] != first.shape[1:] or n > first.shape[0]
            or not torch.equal(first[:n].to(cos_sin_cache.device, cos_sin_cache.dtype), cos_sin_cache)):
        raise ValueError(
            f"this model's RoPE table {tuple(cos_sin_cache.shape)} differs from the one an earlier model claimed in "
            f"this process {tuple(first.shape)}; torch_npu's _npu_rotary_embedding keeps the first table it sees, so "
            "this model would be silently wrong on Ascend. Run it in its own process (or, for the same model, give "
            "it a max_model_len no longer than the first one's)")


# npu_interleave_rope's only head size (op-plugin torch_npu-npu_interleave_rope.md: D must be 64).
INTERLEAVE_ROPE_DIM = 64


def _interleave_rope(torch_npu, positions: torch.Tensor, x: torch.Tensor, cos_sin_cache: torch.Tensor) -> torch.Tensor:
    """``x`` ``[T, n*64]`` rotated in interleaved pairs with ``npu_interleave_rope``, pairs put back in place."""
    cos, sin = cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
    cos, sin = (torch.cat((t, t), dim=-1).to(x.dtype)[:, None, None, :] for t in (cos, sin))
    heads = x.reshape(x.shape[0], -1, 1, INTERLEAVE_ROPE_DIM)
    rotated = torch_npu.npu_interleave_rope(heads, cos, sin)
    return rotated.unflatten(-1, (2, -1)).transpose(-1, -2).reshape(x.shape)


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Return rotated copies of ``query`` ``[T, nh*hd]`` and ``key`` ``[T, nkv*hd]`` (see ``mini_platform.ops``)."""
    torch_npu = importlib.import_module("torch_npu")
    rot_dim = check_rotary_args(positions, query, key, head_size, cos_sin_cache)
    if not is_neox_style and rot_dim == head_size == INTERLEAVE_ROPE_DIM:
        return _interleave_rope(torch_npu, positions, query, cos_sin_cache), \
            _interleave_rope(torch_npu, positions, key, cos_sin_cache)
    if rot_dim == head_size:
        query = query.clone(memory_format=torch.contiguous_format)
        key = key.clone(memory_format=torch.contiguous_format)
        torch_npu._npu_rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style)
        return query, key
    T = query.shape[0]
    q_heads = query.view(T, query.shape[1] // head_size, head_size)
    k_heads = key.view(T, key.shape[1] // head_size, head_size)
    # Fresh copies of the rotary parts (``.contiguous()`` would return the input itself when T = heads = 1).
    q_rot = q_heads[..., :rot_dim].clone(memory_format=torch.contiguous_format)
    k_rot = k_heads[..., :rot_dim].clone(memory_format=torch.contiguous_format)
    torch_npu._npu_rotary_embedding(positions, q_rot.flatten(1), k_rot.flatten(1), rot_dim, cos_sin_cache,
                                    is_neox_style)  # views: the op writes through to q_rot, k_rot
    q = torch.cat((q_rot, q_heads[..., rot_dim:]), dim=-1).view(query.shape)
    k = torch.cat((k_rot, k_heads[..., rot_dim:]), dim=-1).view(key.shape)
    return q, k
