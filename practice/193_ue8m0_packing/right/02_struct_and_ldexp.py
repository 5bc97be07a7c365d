# Correct: rounds up with frexp but compares against math.ldexp(0.5, e) instead of testing the mantissa, packs and unpacks with struct ("<i"/"<h" and their unsigned "<I"/"<H" for the codes); the range check happens on the word values first.
from __future__ import annotations

import math
import struct

_FORMATS = {2: ("<h", "<BB"), 4: ("<i", "<BBBB")}


def encode_ue8m0(scale):
    if not (scale > 0 and scale != math.inf):       # also False for NaN
        raise ValueError(f"UE8M0 needs a finite positive scale, got {scale}")
    _, e = math.frexp(scale)
    if math.ldexp(0.5, e) == scale:                 # exact power of two: 2**(e-1)
        e -= 1
    if abs(e) > 127:
        raise ValueError(f"scale {scale} needs 2**{e}, out of range")
    return 127 + e


def decode_ue8m0(byte):
    if byte not in range(256):
        raise ValueError(f"{byte} is not a UE8M0 byte")
    if byte == 255:
        return float("nan")
    return math.ldexp(1.0, byte - 127)


def _formats(per_word):
    if per_word not in _FORMATS:
        raise ValueError(f"per_word must be 2 or 4, got {per_word}")
    return _FORMATS[per_word]


def pack(codes, per_word):
    word_fmt, byte_fmt = _formats(per_word)
    if not all(0 <= c <= 255 for c in codes):
        raise ValueError("codes are bytes, 0..255")
    codes = list(codes)
    while len(codes) % per_word:
        codes.append(0)
    result = []
    for i in range(0, len(codes), per_word):
        raw = struct.pack(byte_fmt, *codes[i:i + per_word])
        result.append(struct.unpack(word_fmt, raw)[0])
    return result


def unpack(words, per_word, count):
    word_fmt, byte_fmt = _formats(per_word)
    lo, hi = -2 ** (8 * per_word - 1), 2 ** (8 * per_word - 1) - 1
    bad = [w for w in words if not lo <= w <= hi]
    if bad:
        raise ValueError(f"words out of the signed range: {bad}")
    if count > per_word * len(words):
        raise ValueError("count is larger than the words hold")
    codes = []
    for w in words:
        codes += struct.unpack(byte_fmt, struct.pack(word_fmt, w))
    return codes[:count]


def pack_scales(scales, device):
    if device == "cuda":
        per_word = 4
    elif device == "npu":
        per_word = 2
    else:
        raise ValueError(f"device {device!r}: expected 'cuda' or 'npu'")
    return pack(list(map(encode_ue8m0, scales)), per_word)
