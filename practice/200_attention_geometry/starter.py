"""Exercise 200: derive the attention geometry from a parsed config.json.

Fill in the TODO. Standard library only.
"""
from __future__ import annotations

from typing import Any

ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def attention_geometry(config: dict[str, Any]) -> dict[str, Any]:
    """Return num_heads, num_kv_heads, head_dim, group_size, kind, q_size, kv_size, qkv_rows,
    kv_bytes_per_token, rope_theta and rope_type (see the statement).

    Raise ValueError naming the field when a required field is missing, a count is not a positive
    integer, head_dim cannot be derived exactly, or heads are not a multiple of KV heads.
    """
    raise NotImplementedError("TODO: implement attention_geometry")
