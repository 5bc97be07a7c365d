# Mistake: Validates a derived head_dim only; an explicit head_dim from config.json is taken as it is (a negative one gives negative sizes).
"""Exercise 200 (reference): derive the attention geometry from a parsed config.json."""
from __future__ import annotations

from typing import Any

ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _positive(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _rope(config: dict[str, Any]) -> tuple[float, str]:
    # As transformers 5 does: a legacy rope_scaling dict wins over rope_parameters.
    params = config.get("rope_scaling") or config.get("rope_parameters") or {}
    theta = params.get("rope_theta", config.get("rope_theta", 10000.0))
    return float(theta), params.get("rope_type", params.get("type", "default"))


def attention_geometry(config: dict[str, Any]) -> dict[str, Any]:
    """See the statement: the geometry of the attention layers a config.json describes."""
    for name in ("hidden_size", "num_attention_heads", "num_hidden_layers"):
        if name not in config:
            raise ValueError(f"config.json lacks the required field {name}")
        _positive(name, config[name])
    heads, hidden, layers = config["num_attention_heads"], config["hidden_size"], config["num_hidden_layers"]
    kv_heads = config.get("num_key_value_heads")
    kv_heads = heads if kv_heads is None else _positive("num_key_value_heads", kv_heads)
    head_dim = config.get("head_dim")
    if head_dim is None:
        if hidden % heads:
            raise ValueError(f"hidden_size={hidden} is not divisible by num_attention_heads={heads} "
                             "and there is no head_dim")
        head_dim = hidden // heads
    elif head_dim == 0:
        raise ValueError("head_dim must not be 0")
    if heads % kv_heads:
        raise ValueError(f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}")
    dtype = config.get("dtype") or config.get("torch_dtype") or "float32"
    if dtype not in ELEMENT_BYTES:
        raise ValueError(f"unsupported dtype {dtype!r}; expected one of {sorted(ELEMENT_BYTES)}")
    kind = "MHA" if kv_heads == heads else "MQA" if kv_heads == 1 else "GQA"
    q_size, kv_size = heads * head_dim, kv_heads * head_dim
    theta, rope_type = _rope(config)
    return {"num_heads": heads, "num_kv_heads": kv_heads, "head_dim": head_dim, "group_size": heads // kv_heads,
            "kind": kind, "q_size": q_size, "kv_size": kv_size, "qkv_rows": q_size + 2 * kv_size,
            "kv_bytes_per_token": 2 * layers * kv_size * ELEMENT_BYTES[dtype],
            "rope_theta": theta, "rope_type": rope_type}


# ---------------------------------------------------------------- part two: the engine's rope_settings

class UnsupportedModelError(ValueError):
    """The checkpoint asks for something the engine does not implement (here: a RoPE kind)."""


# RoPE kind -> the keys it needs besides rope_theta.
SUPPORTED_ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
                        "llama3": ("factor", "low_freq_factor", "high_freq_factor"), "yarn": ()}


def rope_settings(cfg: dict[str, Any]) -> tuple[float, dict[str, Any] | None]:
    """(rope_theta, scaling) from either spelling; scaling is None for plain RoPE."""
    params = dict(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})   # a copy: cfg stays as it was
    theta = next(t for t in (params.pop("rope_theta", None), cfg.get("rope_theta"), 10000.0) if t is not None)
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or not 0 < theta < float("inf"):
        raise ValueError(f"rope_theta must be a positive number, got {theta!r}")
    kind = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    if kind not in SUPPORTED_ROPE_TYPES:
        raise UnsupportedModelError(f"RoPE scaling type {kind!r} is not supported")
    if (params.get("partial_rotary_factor") or cfg.get("partial_rotary_factor") or 1.0) != 1.0:
        raise UnsupportedModelError("partial_rotary_factor != 1 is not supported")
    missing = [k for k in SUPPORTED_ROPE_TYPES[kind] if params.get(k) is None]
    if missing:
        raise ValueError(f"RoPE scaling {kind!r} lacks {missing}")
    if kind == "default":
        return float(theta), None
    if kind in ("llama3", "yarn"):
        params["original_max_position_embeddings"] = (cfg.get("original_max_position_embeddings")
                                                      or params.get("original_max_position_embeddings")
                                                      or cfg.get("max_position_embeddings", 2048))
    if kind == "yarn" and params.get("factor") is None:
        params["factor"] = cfg.get("max_position_embeddings", 2048) / params["original_max_position_embeddings"]
    return float(theta), {"rope_type": kind, **params}
