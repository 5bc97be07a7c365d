# Correct: a table of (field, required) rules checked with one helper, the RoPE dict chosen by a helper shared by both parts (rope_settings copies it with copy.deepcopy), the geometry built with dict(zip(...)).
from __future__ import annotations

import copy

BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
SUPPORTED_ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
                        "llama3": ("factor", "low_freq_factor", "high_freq_factor"), "yarn": ()}


class UnsupportedModelError(ValueError):
    pass


def _rope_dict(cfg):
    return cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}


def _field(config, name, default=None, required=False):
    if required and name not in config:
        raise ValueError(f"required field '{name}' is absent")
    value = config.get(name)
    if value is None:
        return default
    if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise ValueError(f"'{name}' should be a positive int, found {value!r}")
    return value


def attention_geometry(config):
    hidden = _field(config, "hidden_size", required=True)
    heads = _field(config, "num_attention_heads", required=True)
    layers = _field(config, "num_hidden_layers", required=True)
    kv_heads = _field(config, "num_key_value_heads", heads)
    head_dim = _field(config, "head_dim")
    if head_dim is None:
        head_dim, rest = divmod(hidden, heads)
        if rest:
            raise ValueError(f"cannot derive head_dim: hidden_size={hidden}, heads={heads}")
    group, rest = divmod(heads, kv_heads)
    if rest:
        raise ValueError(f"{heads} heads cannot be shared by num_key_value_heads={kv_heads}")
    name = config.get("dtype") or config.get("torch_dtype") or "float32"
    try:
        size = BYTES[name]
    except KeyError:
        raise ValueError(f"dtype {name} is not supported") from None
    rope = _rope_dict(config)
    theta = rope.get("rope_theta", config.get("rope_theta", 10000.0))
    rope_type = rope.get("rope_type") or rope.get("type") or "default"
    kind = {True: "MHA"}.get(group == 1) or ("MQA" if kv_heads == 1 else "GQA")
    keys = ("num_heads", "num_kv_heads", "head_dim", "group_size", "kind", "q_size", "kv_size", "qkv_rows",
            "kv_bytes_per_token", "rope_theta", "rope_type")
    values = (heads, kv_heads, head_dim, group, kind, heads * head_dim, kv_heads * head_dim,
              (heads + 2 * kv_heads) * head_dim, 2 * layers * kv_heads * head_dim * size, float(theta), rope_type)
    return dict(zip(keys, values))


def rope_settings(cfg):
    params = copy.deepcopy(_rope_dict(cfg))
    candidates = [params.pop("rope_theta", None), cfg.get("rope_theta"), 10000.0]
    theta = [t for t in candidates if t is not None][0]
    ok = type(theta) in (int, float) and theta > 0 and theta != float("inf")
    if not ok:
        raise ValueError(f"rope_theta={theta!r}: expected a positive finite number")
    legacy = params.pop("type", None)
    kind = params.pop("rope_type", None) or legacy or "default"
    if kind not in SUPPORTED_ROPE_TYPES:
        raise UnsupportedModelError(f"RoPE {kind!r}: unsupported (known: {sorted(SUPPORTED_ROPE_TYPES)})")
    factor = params["partial_rotary_factor"] if params.get("partial_rotary_factor") is not None \
        else cfg.get("partial_rotary_factor", 1)
    if factor is not None and factor != 1:
        raise UnsupportedModelError("partial_rotary_factor other than 1")
    missing = [k for k in SUPPORTED_ROPE_TYPES[kind] if params.get(k) is None]
    if missing:
        raise ValueError(f"missing {missing} for rope_type {kind}")
    if kind == "default":
        return float(theta), None
    if kind == "llama3" or kind == "yarn":
        max_pos = cfg.get("max_position_embeddings", 2048)
        original = (cfg.get("original_max_position_embeddings") or params.get("original_max_position_embeddings")
                    or max_pos)
        params["original_max_position_embeddings"] = original
        if kind == "yarn":
            params.setdefault("factor", None)
            if params["factor"] is None:
                params["factor"] = max_pos / original
    return float(theta), dict(rope_type=kind, **params)
