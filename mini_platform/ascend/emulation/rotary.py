"""Emulated ``torch_npu._npu_rotary_embedding`` and ``torch_npu.npu_rotary_mul``.

Sources:
- ``_npu_rotary_embedding``: op-plugin ``op_plugin/ops/atb/RopeAtb.cpp``. It rotates ``query`` and
  ``key`` **in place**, viewed as ``[T, -1]`` rows of whole heads of ``head_size``. The cache
  ``[max_pos, rot_dim]`` holds cos in its first half and sin in its second; it is expanded to
  ``rot_dim`` columns with ``repeat(1, 2)`` for neox style and ``repeat_interleave(2, 1)`` for the
  interleaved style, then ``x * cos + rotate(x) * sin`` is applied. The ATB operation rotates whole
  heads, so ``rot_dim`` must equal ``head_size``; vllm-ascend slices off the rotary part of each head
  first when ``rot_dim < head_size``.
  **Quirk, reproduced here:** the expanded cos/sin tables are C++ ``static`` tensors built on the
  first call of the process; every later call ignores its ``cos_sin_cache`` argument. The real op
  would silently keep using the first table; this emulation raises instead when a later call passes
  a table whose result would differ (anything but the first table or a prefix of it, i.e. the same
  RoPE for a shorter context), so the mistake shows up on CPU.
- ``npu_rotary_mul``: its documentation in torch-npu 2.13.0 (``torch_npu/_op_plugin_docs.py``) (``'half'``: "x_new = torch.cat((-x2, x1), dim=-1)",
  "output = r1 * input + r2 * x_new"), as op-plugin's
  ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_rotary_mul.md``:
  ``x * r1 + rotate(x) * r2`` with ``rotate(x) = cat(-x2, x1)`` over the halves of the last dim in
  ``'half'`` mode and ``(-x[1::2], x[::2])`` interleaved in ``'interleave'`` mode; 3-D/4-D inputs,
  ``r1``/``r2`` broadcast against ``x``.

Both compute in fp32 and return the input dtype. Where the emulation is more lenient than the
hardware: the ATB Rope operation behind ``_npu_rotary_embedding`` (CANN ``RopeOperation`` page) takes
``query``/``key`` ``[ntokens, hidden]`` in float16/bfloat16 only (a float32 cos table is its
high-precision mode); the emulation also accepts float32 ``query``/``key`` so fp32 models can run the
npu backend here. Emulation note: verified against an emulation of torch_npu semantics; not run on
Ascend hardware here.
"""
from __future__ import annotations

import torch

__all__ = ["_npu_rotary_embedding", "npu_rotary_mul"]

# The first cos_sin_cache passed to _npu_rotary_embedding in this (emulated) process.
_static_cos_sin_cache: torch.Tensor | None = None


def reset_process_state() -> None:
    """Forget the static cos/sin table, as a fresh process would."""
    global _static_cos_sin_cache
    _static_cos_sin_cache = None


def _rotate(x: torch.Tensor, interleaved: bool) -> torch.Tensor:
    if interleaved:
        return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def npu_rotary_mul(self: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half",
                   rotate: torch.Tensor | None = None) -> torch.Tensor:
    """``self * r1 + rotate(self) * r2``; ``rotary_mode`` is ``'half'`` or ``'interleave'``."""
    if rotary_mode not in ("half", "interleave"):
        raise ValueError(f"npu_rotary_mul: rotary_mode must be 'half' or 'interleave', got {rotary_mode!r}")
    if self.dim() not in (3, 4):
        raise ValueError(f"npu_rotary_mul: input must be 3-D or 4-D, got shape {tuple(self.shape)}")
    if rotate is not None:
        raise NotImplementedError("npu_rotary_mul: the emulation does not model the `rotate` matrix argument")
    if self.shape[-1] % 2:
        raise ValueError(f"npu_rotary_mul: last dim {self.shape[-1]} must be even")
    x = self.float()
    out = x * r1.float() + _rotate(x, rotary_mode == "interleave") * r2.float()
    return out.to(self.dtype)


def _npu_rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                          cos_sin_cache: torch.Tensor, is_neox_style: bool) -> None:
    """Rotate ``query`` and ``key`` in place (see the module docstring, including the static-cache quirk)."""
    global _static_cos_sin_cache
    if _static_cos_sin_cache is None:
        _static_cos_sin_cache = cos_sin_cache.detach().clone()
    elif (_static_cos_sin_cache.shape[1:] != cos_sin_cache.shape[1:]
          or cos_sin_cache.shape[0] > _static_cos_sin_cache.shape[0]
          or not torch.equal(_static_cos_sin_cache[:cos_sin_cache.shape[0]],
                             cos_sin_cache.to(_static_cos_sin_cache.dtype))):
        raise RuntimeError(
            "_npu_rotary_embedding was given a cos_sin_cache different from the first one of this process; "
            "the real op caches the first table in a C++ static and would silently keep using it. "
            "Use one table per process (or a rotary op without that cache)")
    rot_dim = _static_cos_sin_cache.shape[-1]
    if rot_dim != head_size:
        raise ValueError(f"_npu_rotary_embedding rotates whole heads: cos_sin_cache width {rot_dim} must equal "
                         f"head_size {head_size}; pass only the rotary part of each head")
    T = positions.numel()  # the op flattens positions: one token per entry
    cos, sin = _static_cos_sin_cache.float().chunk(2, dim=-1)
    if is_neox_style:
        cos, sin = cos.repeat(1, 2), sin.repeat(1, 2)
    else:
        cos, sin = cos.repeat_interleave(2, 1), sin.repeat_interleave(2, 1)
    flat = positions.flatten().long()
    cos, sin = cos[flat][:, None, :], sin[flat][:, None, :]
    for name, t in (("query", query), ("key", key)):
        if not t.is_contiguous() or t.dim() != 2 or t.shape[0] != T or t.shape[1] % head_size:
            raise ValueError(f"_npu_rotary_embedding: {name} must be contiguous [ntokens={T}, num_heads * {head_size}] "
                             f"(one row per position, whole heads), got shape {tuple(t.shape)}")
        heads = t.view(T, t.shape[1] // head_size, head_size)
        x = heads.float()
        heads.copy_(x * cos + _rotate(x, not is_neox_style) * sin)
