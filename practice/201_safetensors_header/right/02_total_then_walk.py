# Correct: a class-free table of (size, format), offsets validated in a different order (length before shape), tiling checked as a walk over entries sorted by (begin, end) that remembers the last name; BF16 through array-free struct.iter_unpack.
from __future__ import annotations

import json
import struct
from functools import reduce
from operator import mul

INFO = {"F64": (8, "d"), "F32": (4, "f"), "F16": (2, "e"), "BF16": (2, "H"), "I64": (8, "q"), "I32": (4, "i"),
        "I16": (2, "h"), "I8": (1, "b"), "U8": (1, "B"), "BOOL": (1, "?")}


class SafetensorsError(ValueError):
    """Not a safetensors file."""


def _fail(msg):
    raise SafetensorsError(msg)


def _entries(header):
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            _fail(f"'{name}' is not described by an object")
        offs = info.get("data_offsets")
        if not (isinstance(offs, list) and len(offs) == 2):
            _fail(f"'{name}' data_offsets={offs!r}: need [begin, end]")
        if any(isinstance(o, bool) or not isinstance(o, int) for o in offs):
            _fail(f"'{name}' data_offsets must hold integers")
        if offs[0] < 0 or offs[1] < offs[0]:
            _fail(f"'{name}' data_offsets={offs}: need 0 <= begin <= end")
        dtype = info.get("dtype")
        if dtype not in INFO:
            _fail(f"'{name}': dtype {dtype!r} is not one of {sorted(INFO)}")
        shape = info.get("shape")
        if not isinstance(shape, list):
            _fail(f"'{name}': shape must be a list")
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                _fail(f"'{name}': shape entry {d!r} is not a non-negative integer")
        want = reduce(mul, shape, 1) * INFO[dtype][0]
        if offs[1] - offs[0] != want:
            _fail(f"'{name}': data_offsets span {offs[1] - offs[0]} bytes, the shape needs {want}")
        yield offs[0], offs[1], name, dtype, shape


def parse_header(blob):
    if len(blob) < 8:
        _fail("truncated: no header length")
    n = struct.unpack_from("<Q", blob)[0]
    if len(blob) - 8 < n:
        _fail(f"header of {n} bytes does not fit")
    raw = blob[8:8 + n]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        _fail("header is not UTF-8")
    try:
        header = json.loads(raw)
    except ValueError:
        _fail("header is not JSON")
    if not isinstance(header, dict):
        _fail("header is not a JSON object")
    entries = sorted(_entries(header))
    size, cursor, last = len(blob) - 8 - n, 0, None
    out = {}
    for begin, end, name, dtype, shape in entries:
        if begin != cursor:
            _fail(f"tensor {name} begins at {begin} but the previous data ends at {cursor}")
        if end > size:
            _fail(f"tensor {name} runs past the data buffer ({end} > {size})")
        cursor, last = end, name
        out[name] = {"dtype": dtype, "shape": shape, "start": 8 + n + begin, "end": 8 + n + end}
    if cursor != size:
        _fail(f"data buffer is {size} bytes but tensors cover {cursor}" + (f" (last: {last})" if last else ""))
    return out


def read_tensor(blob, name):
    header = parse_header(blob)
    if name not in header:
        raise KeyError(name)
    info = header[name]
    _, fmt = INFO[info["dtype"]]
    values = [v[0] for v in struct.iter_unpack("<" + fmt, blob[info["start"]:info["end"]])]
    if info["dtype"] == "BF16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in values]
    return values
