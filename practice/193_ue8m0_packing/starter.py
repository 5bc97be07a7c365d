"""Exercise 193: UE8M0 scale factors, packed four per int32 (CUDA) or two per int16 (Ascend).

Fill in the TODOs. Keep the names: the tests import them.
"""
from __future__ import annotations

import math

WORDS_PER_DEVICE = {"cuda": 4, "npu": 2}  # bytes per packed word


def encode_ue8m0(scale: float) -> int:
    """Byte E + 127 of the smallest power of two 2**E >= scale; ValueError if impossible."""
    # TODO (hint: math.frexp(scale) == (m, e) with scale == m * 2**e and 0.5 <= m < 1)
    raise NotImplementedError("encode_ue8m0")


def decode_ue8m0(byte: int) -> float:
    """2 ** (byte - 127); 255 is NaN."""
    # TODO
    raise NotImplementedError("decode_ue8m0")


def pack(codes: list[int], per_word: int) -> list[int]:
    """Little-endian groups of `per_word` bytes (padded with 0) as signed 8*per_word-bit integers."""
    # TODO
    raise NotImplementedError("pack")


def unpack(words: list[int], per_word: int, count: int) -> list[int]:
    """The first `count` bytes packed in `words` (inverse of pack)."""
    # TODO
    raise NotImplementedError("unpack")


def pack_scales(scales: list[float], device: str) -> list[int]:
    """Encode every scale and pack them for `device` ("cuda": 4 per int32, "npu": 2 per int16)."""
    # TODO
    raise NotImplementedError("pack_scales")
