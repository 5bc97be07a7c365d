# Mistake: Accepts any number in data_offsets (4.0 compares equal to 4), not only integers.
"""Exercise 201 (reference): parse a safetensors file with struct and json."""
from __future__ import annotations

import json
import math
import struct

# dtype -> (bytes per element, struct format character); BF16 has no struct format.
DTYPES = {"F64": (8, "d"), "F32": (4, "f"), "F16": (2, "e"), "BF16": (2, None), "I64": (8, "q"),
          "I32": (4, "i"), "I16": (2, "h"), "I8": (1, "b"), "U8": (1, "B"), "BOOL": (1, "?")}


class SafetensorsError(ValueError):
    """The bytes are not a valid safetensors file."""


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_entry(name: str, info: object) -> tuple[str, list[int], int, int]:
    if not isinstance(info, dict):
        raise SafetensorsError(f"tensor {name!r}: header entry is not an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in DTYPES:
        raise SafetensorsError(f"tensor {name!r}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise SafetensorsError(f"tensor {name!r}: shape {shape!r} is not a list of non-negative integers")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, (int, float)) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1]):
        raise SafetensorsError(f"tensor {name!r}: data_offsets {offsets!r} must be [begin, end], 0 <= begin <= end")
    if offsets[1] - offsets[0] != math.prod(shape) * DTYPES[dtype][0]:
        raise SafetensorsError(f"tensor {name!r}: {offsets[1] - offsets[0]} bytes for shape {shape} of {dtype}")
    return dtype, shape, offsets[0], offsets[1]


def parse_header(blob: bytes) -> dict[str, dict]:
    """{name: {"dtype", "shape", "start", "end"}} with absolute byte positions in blob."""
    if len(blob) < 8:
        raise SafetensorsError(f"a safetensors file has at least 8 bytes, got {len(blob)}")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise SafetensorsError(f"header length {n} runs past the end of the {len(blob)}-byte file")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetensorsError(f"the header is not UTF-8 JSON: {exc}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("the header is not a JSON object")
    base, data_len = 8 + n, len(blob) - 8 - n
    entries = sorted(((*_check_entry(k, v), k) for k, v in header.items() if k != "__metadata__"),
                     key=lambda e: (e[2], e[3]))
    position = 0
    for _, _, begin, end, name in entries:
        if begin != position:
            raise SafetensorsError(f"tensor {name!r} starts at {begin}, expected {position} (hole or overlap)")
        position = end
    if position != data_len:
        last = f"tensor {entries[-1][4]!r} ends at {position}" if entries else "no tensors"
        raise SafetensorsError(f"{last}, but the data buffer has {data_len} bytes")
    return {name: {"dtype": dtype, "shape": shape, "start": base + begin, "end": base + end}
            for dtype, shape, begin, end, name in entries}


def read_tensor(blob: bytes, name: str) -> list:
    """All elements of tensor `name`, row-major, as a flat list (KeyError for an unknown name)."""
    info = parse_header(blob)[name]
    data = blob[info["start"]:info["end"]]
    size, fmt = DTYPES[info["dtype"]]
    count = len(data) // size
    if fmt is None:  # BF16: the upper half of a float32
        halves = struct.unpack(f"<{count}H", data)
        return list(struct.unpack(f"<{count}f", struct.pack(f"<{count}I", *(h << 16 for h in halves))))
    return list(struct.unpack(f"<{count}{fmt}", data))
