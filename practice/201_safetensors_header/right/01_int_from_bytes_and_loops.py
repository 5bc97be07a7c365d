# Correct: int.from_bytes for the length, per-tensor bounds checked before the tiling walk (which names both tensors of an overlap), elements decoded one at a time with struct.unpack_from and BF16 via int.from_bytes.
from __future__ import annotations

import json
import struct

SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
FMT = {"F64": "<d", "F32": "<f", "F16": "<e", "I64": "<q", "I32": "<i", "I16": "<h", "I8": "<b", "U8": "<B",
       "BOOL": "<?"}


class SafetensorsError(ValueError):
    pass


def _int(v):
    return type(v) is int


def parse_header(blob):
    if len(blob) < 8:
        raise SafetensorsError("file too short for the 8-byte length prefix")
    n = int.from_bytes(blob[:8], "little")
    if 8 + n > len(blob):
        raise SafetensorsError("header length points past the end of the file")
    try:
        text = bytes(blob[8:8 + n]).decode("utf-8")
        header = json.loads(text)
    except ValueError:
        raise SafetensorsError("header is not valid UTF-8 JSON") from None
    if type(header) is not dict:
        raise SafetensorsError("header must be a JSON object")
    buffer_len = len(blob) - 8 - n
    result = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if type(info) is not dict:
            raise SafetensorsError(f"{name}: entry must be an object")
        dtype = info.get("dtype")
        if dtype not in SIZE:
            raise SafetensorsError(f"{name}: dtype {dtype} unknown")
        shape = info.get("shape")
        if type(shape) is not list or any(not _int(d) or d < 0 for d in shape):
            raise SafetensorsError(f"{name}: bad shape {shape}")
        offs = info.get("data_offsets")
        if type(offs) is not list or len(offs) != 2 or not _int(offs[0]) or not _int(offs[1]):
            raise SafetensorsError(f"{name}: data_offsets must be two integers")
        begin, end = offs
        if begin < 0 or end < begin:
            raise SafetensorsError(f"{name}: data_offsets {offs} out of order")
        numel = 1
        for d in shape:
            numel *= d
        if end - begin != numel * SIZE[dtype]:
            raise SafetensorsError(f"{name}: expected {numel * SIZE[dtype]} bytes, offsets span {end - begin}")
        if end > buffer_len:
            raise SafetensorsError(f"{name}: ends at {end}, beyond the {buffer_len}-byte buffer")
        result[name] = {"dtype": dtype, "shape": shape, "start": 8 + n + begin, "end": 8 + n + end}
    expected, previous = 8 + n, None
    for name in sorted(result, key=lambda k: (result[k]["start"], result[k]["end"])):
        start = result[name]["start"]
        if start < expected:
            raise SafetensorsError(f"{name} overlaps {previous}")
        if start > expected:
            raise SafetensorsError(f"hole of {start - expected} bytes before {name}")
        expected, previous = result[name]["end"], name
    if expected != len(blob):
        where = f"after {previous}" if previous else "with no tensors"
        raise SafetensorsError(f"{len(blob) - expected} unused bytes in the data buffer {where}")
    return result


def read_tensor(blob, name):
    info = parse_header(blob)[name]
    dtype, pos, end = info["dtype"], info["start"], info["end"]
    out = []
    step = SIZE[dtype]
    while pos < end:
        if dtype == "BF16":
            bits = int.from_bytes(blob[pos:pos + 2], "little") << 16
            out.append(struct.unpack("<f", bits.to_bytes(4, "little"))[0])
        else:
            out.append(struct.unpack_from(FMT[dtype], blob, pos)[0])
        pos += step
    return out
