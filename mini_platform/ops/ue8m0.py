"""UE8M0 scale factors: power-of-two scales kept as one exponent byte, packed the way kernels take them.

Block-quantised FP8/FP4 formats give each small block of numbers one scale. With UE8M0 the scale is a
power of two stored as its biased exponent: byte ``b`` means ``2 ** (b - 127)`` (255 is NaN; there is no
sign and no zero). For an fp32 power of two the byte is just its exponent field, ``bits >> 23``.

Kernels take the bytes packed, little-endian (byte ``i`` at bits ``8*i``), and the container differs:
DeepGEMM's CUDA kernels pack four along K into an ``int32``; torch_npu's MX quantisation ops give them in
pairs, which read as an ``int16`` (DeepInfer's ``Platform.fp8_sf_type`` names exactly this: int32 on
CUDA, int16 on Ascend). A top byte >= 128 makes the packed word negative: the containers are signed.
"""
from __future__ import annotations

import torch

# Packed container per device type (the number of scales per word is its size in bytes).
SCALE_CONTAINERS = {"cuda": torch.int32, "npu": torch.int16}


def ceil_to_ue8m0(x: torch.Tensor) -> torch.Tensor:
    """The smallest power of two ``>= x`` (x > 0, fp32): rounding a scale up never overflows the block."""
    mantissa, exponent = torch.frexp(x.float())          # x = mantissa * 2**exponent, 0.5 <= mantissa < 1
    power = torch.where(mantissa == 0.5, exponent - 1, exponent)
    return torch.ldexp(torch.ones_like(mantissa), power)


def encode_ue8m0(scales: torch.Tensor) -> torch.Tensor:
    """fp32 powers of two -> UE8M0 bytes (``uint8``): the exponent field, ``bits >> 23``."""
    if scales.dtype != torch.float32:
        raise TypeError(f"UE8M0 encodes fp32 scales, got {scales.dtype}")
    bits = scales.contiguous().view(torch.int32)
    if bool(((bits & 0x7FFFFF) != 0).any()) or bool((scales <= 0).any()):
        raise ValueError("UE8M0 holds positive powers of two only; round the scales with ceil_to_ue8m0 first")
    return (bits >> 23).to(torch.uint8)


def decode_ue8m0(codes: torch.Tensor) -> torch.Tensor:
    """UE8M0 bytes -> fp32 scales ``2 ** (b - 127)``."""
    return (codes.to(torch.int32) << 23).view(torch.float32)


def pack_ue8m0(codes: torch.Tensor, container: torch.dtype) -> torch.Tensor:
    """Pack the last dim of ``codes`` (``uint8``) into ``container`` words (int32: 4 per word, int16: 2),
    little-endian; the last dim is padded with zero bytes to a whole number of words."""
    if codes.dtype != torch.uint8:
        raise TypeError(f"pack UE8M0 bytes (uint8), got {codes.dtype}")
    per_word = torch.empty((), dtype=container).element_size()
    padding = -codes.shape[-1] % per_word
    # A fresh contiguous copy (a slice can look contiguous yet have strides a view rejects); viewing it as the
    # container reinterprets memory, which is little-endian on every target here.
    return torch.cat([codes, codes.new_zeros(*codes.shape[:-1], padding)], dim=-1).view(container)


def unpack_ue8m0(words: torch.Tensor, num_codes: int) -> torch.Tensor:
    """The first ``num_codes`` bytes packed in the last dim of ``words``."""
    return words.contiguous().view(torch.uint8)[..., :num_codes]
