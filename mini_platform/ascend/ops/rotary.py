"""Rotary embedding on Ascend: ``torch_npu._npu_rotary_embedding``, called as vllm-ascend v0.9.1–v0.23 did.

The op works in place on ``query.view(T, -1)`` and ``key.view(T, -1)`` and rotates whole heads, so
this out-of-place kernel rotates contiguous copies; for partial rotary (``rot_dim < head_size``) it
passes only the first ``rot_dim`` dims of each head, with ``head_size=rot_dim``, and concatenates the
untouched rest back, as vllm-ascend's ``rope_forward_oot`` does.

Beware on real hardware: the op builds its cos/sin tables from the ``cos_sin_cache`` of its *first*
call and keeps them in a C++ static for the life of the process (op-plugin ``RopeAtb.cpp``); a
second model with another RoPE table in the same process silently gets the first table. The CPU
emulation raises in that case instead.
"""
from __future__ import annotations

import importlib

import torch

from ...ops.cpu.rotary import check_rotary_args


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                     cos_sin_cache: torch.Tensor, is_neox_style: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Return rotated copies of ``query`` ``[T, nh*hd]`` and ``key`` ``[T, nkv*hd]`` (see ``mini_platform.ops``)."""
    torch_npu = importlib.import_module("torch_npu")
    rot_dim = check_rotary_args(query, key, head_size, cos_sin_cache)
    if rot_dim == head_size:
        query = query.clone(memory_format=torch.contiguous_format)
        key = key.clone(memory_format=torch.contiguous_format)
        torch_npu._npu_rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style)
        return query, key
    T = query.shape[0]
    q_heads, k_heads = query.view(T, -1, head_size), key.view(T, -1, head_size)
    q_rot = q_heads[..., :rot_dim].contiguous().view(T, -1)  # fresh copies of the rotary parts
    k_rot = k_heads[..., :rot_dim].contiguous().view(T, -1)
    torch_npu._npu_rotary_embedding(positions, q_rot, k_rot, rot_dim, cos_sin_cache, is_neox_style)
    q = torch.cat((q_rot.view(T, -1, rot_dim), q_heads[..., rot_dim:]), dim=-1).view(T, -1)
    k = torch.cat((k_rot.view(T, -1, rot_dim), k_heads[..., rot_dim:]), dim=-1).view(T, -1)
    return q, k
