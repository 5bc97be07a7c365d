# Correct: finds the exponent exactly with integer arithmetic (as_integer_ratio and bit_length), packs with int.from_bytes(..., "little", signed=True) and unpacks with int.to_bytes; validation in another order, own messages.
from __future__ import annotations

import math

_WIDTH = {"cuda": 4, "npu": 2}


def encode_ue8m0(scale):
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise ValueError("scale must be finite and > 0")
    num, den = float(scale).as_integer_ratio()   # exact: scale == num / den, den a power of two
    e = num.bit_length() - den.bit_length()      # 2**(e-1) < num/den < 2**(e+1)
    if num * 2 ** max(-e, 0) > den * 2 ** max(e, 0):   # scale > 2**e: round up
        e += 1
    elif num * 2 ** max(-(e - 1), 0) <= den * 2 ** max(e - 1, 0):  # scale <= 2**(e-1)
        e -= 1
    if e < -127 or e > 127:
        raise ValueError(f"2**{e} does not fit UE8M0")
    return e + 127


def decode_ue8m0(byte):
    if byte == 255:
        return math.nan
    if byte < 0 or byte > 254:
        raise ValueError(f"bad UE8M0 byte {byte}")
    return 2.0 ** (byte - 127)


def pack(codes, per_word):
    for c in codes:
        if not 0 <= c < 256:
            raise ValueError(f"code {c} is not a byte")
    if per_word != 2 and per_word != 4:
        raise ValueError("per_word is 2 or 4")
    data = bytes(codes) + bytes(-len(codes) % per_word)
    return [int.from_bytes(data[i:i + per_word], "little", signed=True) for i in range(0, len(data), per_word)]


def unpack(words, per_word, count):
    if per_word not in (2, 4):
        raise ValueError("per_word is 2 or 4")
    out = b""
    for w in words:
        try:
            out += w.to_bytes(per_word, "little", signed=True)
        except OverflowError:
            raise ValueError(f"{w} does not fit a signed {8 * per_word}-bit word") from None
    if count > len(out):
        raise ValueError(f"only {len(out)} bytes, {count} asked")
    return list(out[:count])


def pack_scales(scales, device):
    try:
        per_word = _WIDTH[device]
    except KeyError:
        raise ValueError(f"device must be cuda or npu, not {device!r}") from None
    return pack([encode_ue8m0(s) for s in scales], per_word)
