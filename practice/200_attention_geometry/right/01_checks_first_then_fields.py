# Correct: validates every field up front in a loop with its own wording (dtype and divisibility before any arithmetic), reads RoPE with explicit if/else; rope_settings written as a sequence of if-statements with math.isfinite.
from __future__ import annotations

import math

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2}


def _check_int(config, name):
    value = config[name]
    if type(value) is not int or value < 1:
        raise ValueError(f"bad {name}: {value!r} (need an int >= 1)")
    return value


def attention_geometry(config):
    for name in ("num_attention_heads", "hidden_size", "num_hidden_layers"):
        if name not in config:
            raise ValueError(f"missing {name} in config.json")
        _check_int(config, name)
    dtype = config.get("dtype")
    if not dtype:
        dtype = config.get("torch_dtype") or "float32"
    if dtype not in SIZES:
        raise ValueError(f"cannot size dtype {dtype}")
    heads = config["num_attention_heads"]
    kv_heads = heads if config.get("num_key_value_heads") is None else _check_int(config, "num_key_value_heads")
    if heads % kv_heads != 0:
        raise ValueError(f"num_key_value_heads ({kv_heads}) must divide {heads}")
    if config.get("head_dim") is not None:
        head_dim = _check_int(config, "head_dim")
    else:
        if config["hidden_size"] % heads != 0:
            raise ValueError(f"hidden_size {config['hidden_size']} % heads {heads} != 0")
        head_dim = config["hidden_size"] // heads
    if kv_heads == heads:
        kind = "MHA"
    elif kv_heads == 1:
        kind = "MQA"
    else:
        kind = "GQA"
    scaling = config.get("rope_scaling")
    if scaling:
        rope = scaling
    elif config.get("rope_parameters"):
        rope = config["rope_parameters"]
    else:
        rope = {}
    theta = rope["rope_theta"] if "rope_theta" in rope else config.get("rope_theta", 10000.0)
    if "rope_type" in rope:
        rope_type = rope["rope_type"]
    elif "type" in rope:
        rope_type = rope["type"]
    else:
        rope_type = "default"
    q_size = heads * head_dim
    kv_size = kv_heads * head_dim
    return {
        "num_heads": heads, "num_kv_heads": kv_heads, "head_dim": head_dim, "group_size": heads // kv_heads,
        "kind": kind, "q_size": q_size, "kv_size": kv_size, "qkv_rows": q_size + kv_size + kv_size,
        "kv_bytes_per_token": 2 * config["num_hidden_layers"] * kv_size * SIZES[dtype],
        "rope_theta": float(theta), "rope_type": rope_type,
    }


class UnsupportedModelError(ValueError):
    """A RoPE kind the engine does not implement."""


SUPPORTED_ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
                        "llama3": ("factor", "low_freq_factor", "high_freq_factor"), "yarn": ()}


def rope_settings(cfg):
    source = cfg.get("rope_scaling")
    if not source:
        source = cfg.get("rope_parameters")
    params = dict(source) if source else {}
    theta = params.pop("rope_theta", None)
    if theta is None:
        theta = cfg.get("rope_theta")
    if theta is None:
        theta = 10000.0
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not math.isfinite(theta) or theta <= 0:
        raise ValueError(f"invalid rope_theta {theta!r}")
    kind = params.pop("rope_type", None)
    legacy = params.pop("type", None)
    if kind is None:
        kind = legacy
    if kind is None:
        kind = "default"
    if kind not in SUPPORTED_ROPE_TYPES:
        raise UnsupportedModelError(f"no support for RoPE kind {kind}")
    partial = params.get("partial_rotary_factor")
    if partial is None:
        partial = cfg.get("partial_rotary_factor")
    if partial is not None and partial != 1:
        raise UnsupportedModelError(f"partial_rotary_factor={partial} needs partial RoPE, unsupported")
    missing = []
    for key in SUPPORTED_ROPE_TYPES[kind]:
        if params.get(key) is None:
            missing.append(key)
    if missing:
        raise ValueError(f"{kind} RoPE needs {', '.join(missing)}")
    if kind == "default":
        return float(theta), None
    if kind in ("llama3", "yarn"):
        original = cfg.get("original_max_position_embeddings")
        if not original:
            original = params.get("original_max_position_embeddings")
        if not original:
            original = cfg.get("max_position_embeddings", 2048)
        params["original_max_position_embeddings"] = original
        if kind == "yarn" and params.get("factor") is None:
            params["factor"] = cfg.get("max_position_embeddings", 2048) / original
    out = {"rope_type": kind}
    out.update(params)
    return float(theta), out
