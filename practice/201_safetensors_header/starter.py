"""Exercise 201: parse a safetensors file with struct and json.

Fill in the TODOs. Standard library only.
"""
from __future__ import annotations

import json
import struct

# dtype -> (bytes per element, struct format character); BF16 has no struct format.
DTYPES = {"F64": (8, "d"), "F32": (4, "f"), "F16": (2, "e"), "BF16": (2, None), "I64": (8, "q"),
          "I32": (4, "i"), "I16": (2, "h"), "I8": (1, "b"), "U8": (1, "B"), "BOOL": (1, "?")}


class SafetensorsError(ValueError):
    """The bytes are not a valid safetensors file."""


def parse_header(blob: bytes) -> dict[str, dict]:
    """{name: {"dtype", "shape", "start", "end"}} with absolute byte positions in blob.

    Skip "__metadata__". Raise SafetensorsError (naming the tensor) on any of the problems the
    statement lists; the tensors, sorted by (begin, end), must tile the data buffer exactly.
    """
    raise NotImplementedError("TODO: implement parse_header")


def read_tensor(blob: bytes, name: str) -> list:
    """All elements of tensor `name`, row-major, as a flat list (KeyError for an unknown name)."""
    raise NotImplementedError("TODO: implement read_tensor")
