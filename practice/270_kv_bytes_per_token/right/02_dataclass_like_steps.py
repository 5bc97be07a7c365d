# Correct: reads every field through one helper, picks MHA or GQA from a small dict, and checks divisibility with divmod.
from __future__ import annotations


def _int_field(config: dict, key: str, default=None) -> int:
    value = config.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"invalid {key}: {value!r} (need a positive integer)")
    return value


def _heads(config: dict) -> tuple[int, int]:
    heads = _int_field(config, "num_attention_heads")
    raw = config.get("num_key_value_heads")
    kv = heads if raw is None else _int_field(config, "num_key_value_heads")
    groups, rest = divmod(heads, kv)
    if rest or groups < 1:
        raise ValueError(f"num_key_value_heads {kv} must divide num_attention_heads {heads}")
    return heads, kv


def attention_kind(config: dict) -> str:
    if config.get("kv_lora_rank") is not None:
        return "MLA"
    heads, kv = _heads(config)
    return {True: "MHA", False: "GQA"}[kv == heads]


def kv_bytes_per_token(config: dict, dtype_bytes: int = 2) -> int:
    if isinstance(dtype_bytes, bool) or not isinstance(dtype_bytes, int) or dtype_bytes < 1:
        raise ValueError(f"invalid dtype_bytes: {dtype_bytes!r}")
    layers = _int_field(config, "num_hidden_layers")
    if attention_kind(config) == "MLA":
        elements = _int_field(config, "kv_lora_rank") + _int_field(config, "qk_rope_head_dim")
        return elements * layers * dtype_bytes
    heads, kv = _heads(config)
    if config.get("head_dim") is None:
        head_dim, rest = divmod(_int_field(config, "hidden_size"), heads)
        if rest:
            raise ValueError(f"hidden_size is not a multiple of num_attention_heads ({heads})")
    else:
        head_dim = _int_field(config, "head_dim")
    keys_and_values = 2
    return keys_and_values * kv * head_dim * layers * dtype_bytes
