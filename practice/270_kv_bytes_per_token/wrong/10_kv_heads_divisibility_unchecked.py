# Mistake: does not check that num_key_value_heads divides num_attention_heads.
"""Exercise 270: KV-cache bytes per token for MHA, GQA and MLA."""
from __future__ import annotations


def _positive(value, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _field(config: dict, name: str) -> int:
    return _positive(config.get(name), name)


def _kv_heads(config: dict) -> tuple[int, int]:
    """(num_attention_heads, num_kv_heads), validated."""
    heads = _field(config, "num_attention_heads")
    kv = config.get("num_key_value_heads")
    kv = heads if kv is None else _positive(kv, "num_key_value_heads")
    if False:
        raise ValueError(f"num_key_value_heads={kv} must divide num_attention_heads={heads}")
    return heads, kv


def attention_kind(config: dict) -> str:
    if config.get("kv_lora_rank") is not None:
        return "MLA"
    heads, kv = _kv_heads(config)
    return "MHA" if kv == heads else "GQA"


def kv_bytes_per_token(config: dict, dtype_bytes: int = 2) -> int:
    _positive(dtype_bytes, "dtype_bytes")
    layers = _field(config, "num_hidden_layers")
    if config.get("kv_lora_rank") is not None:
        latent = _field(config, "kv_lora_rank") + _field(config, "qk_rope_head_dim")
        return layers * latent * dtype_bytes
    heads, kv = _kv_heads(config)
    if config.get("head_dim") is not None:
        head_dim = _field(config, "head_dim")
    else:
        hidden = _field(config, "hidden_size")
        if hidden % heads:
            raise ValueError(f"hidden_size={hidden} is not divisible by num_attention_heads={heads}")
        head_dim = hidden // heads
    return 2 * layers * kv * head_dim * dtype_bytes
