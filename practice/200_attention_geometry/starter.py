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


# ---------------------------------------------------------------- part two: the engine's rope_settings

class UnsupportedModelError(ValueError):
    """The checkpoint asks for something the engine does not implement (here: a RoPE kind)."""


# RoPE kind -> the keys it needs besides rope_theta.
SUPPORTED_ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
                        "llama3": ("factor", "low_freq_factor", "high_freq_factor"), "yarn": ()}


def rope_settings(cfg: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(rope_theta, scaling) from either spelling of a parsed config.json; scaling is None for plain RoPE,
    else {"rope_type": kind, **the other keys}. See the statement's part two for the rules."""
    raise NotImplementedError("TODO: implement rope_settings")
