# Mistake: Rejects a scale below 2**-127 before rounding it up, though a scale just above 2**-128 rounds up to 2**-127 (byte 0).
"""Exercise 193 (a wrong solution): UE8M0 scale factors, packed four per int32 (CUDA) or two per int16 (Ascend)."""
from __future__ import annotations

import math

WORDS_PER_DEVICE = {"cuda": 4, "npu": 2}  # bytes per packed word


def encode_ue8m0(scale: float) -> int:
    """Byte E + 127 of the smallest power of two 2**E >= scale; ValueError if impossible."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"a UE8M0 scale must be a finite positive number, got {scale!r}")
    if not 2.0 ** -127 <= scale:
        raise ValueError(f"scale {scale!r} is below 2**-127")
    mantissa, exponent = math.frexp(scale)  # scale = mantissa * 2**exponent, 0.5 <= mantissa < 1
    power = exponent - 1 if mantissa == 0.5 else exponent
    if not -127 <= power <= 127:
        raise ValueError(f"scale {scale!r} rounds up to 2**{power}, outside UE8M0's range 2**-127 .. 2**127")
    return power + 127


def decode_ue8m0(byte: int) -> float:
    """2 ** (byte - 127); 255 is NaN."""
    if not 0 <= byte <= 255:
        raise ValueError(f"a UE8M0 code is one byte (0..255), got {byte!r}")
    return math.nan if byte == 255 else 2.0 ** (byte - 127)


def _check_width(per_word: int) -> int:
    if per_word not in (2, 4):
        raise ValueError(f"per_word must be 2 (int16) or 4 (int32), got {per_word!r}")
    return 8 * per_word


def pack(codes: list[int], per_word: int) -> list[int]:
    """Little-endian groups of `per_word` bytes (padded with 0) as signed 8*per_word-bit integers."""
    bits = _check_width(per_word)
    if any(not 0 <= c <= 255 for c in codes):
        raise ValueError("every code must be a byte (0..255)")
    padded = list(codes) + [0] * (-len(codes) % per_word)
    words = []
    for start in range(0, len(padded), per_word):
        word = 0
        for i, code in enumerate(padded[start:start + per_word]):
            word |= code << (8 * i)
        words.append(word - (1 << bits) if word >> (bits - 1) else word)  # two's complement
    return words


def unpack(words: list[int], per_word: int, count: int) -> list[int]:
    """The first `count` bytes packed in `words` (inverse of pack)."""
    bits = _check_width(per_word)
    if not 0 <= count <= len(words) * per_word:
        raise ValueError(f"{len(words)} word(s) of {per_word} bytes cannot hold {count} codes")
    codes = []
    for word in words:
        if not -(1 << (bits - 1)) <= word < (1 << (bits - 1)):
            raise ValueError(f"{word} is not a signed {bits}-bit integer")
        unsigned = word & ((1 << bits) - 1)
        codes.extend((unsigned >> (8 * i)) & 0xFF for i in range(per_word))
    return codes[:count]


def pack_scales(scales: list[float], device: str) -> list[int]:
    """Encode every scale and pack them for `device` ("cuda": 4 per int32, "npu": 2 per int16)."""
    if device not in WORDS_PER_DEVICE:
        raise ValueError(f"unknown device {device!r}; choose one of {sorted(WORDS_PER_DEVICE)}")
    return pack([encode_ue8m0(s) for s in scales], WORDS_PER_DEVICE[device])
