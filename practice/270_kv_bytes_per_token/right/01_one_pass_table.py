# Correct: computes the per-layer element count first (a latent, or K and V per KV head) and multiplies once; checks dtype_bytes last, with its own messages.
from __future__ import annotations


def _need(config: dict, name: str) -> int:
    value = config.get(name)
    if type(value) is not int or value <= 0:
        raise ValueError(f"config[{name!r}] = {value!r} is not a positive integer")
    return value


def attention_kind(config: dict) -> str:
    if config.get("kv_lora_rank") is not None:
        return "MLA"
    heads = _need(config, "num_attention_heads")
    if config.get("num_key_value_heads") is None:
        return "MHA"
    kv = _need(config, "num_key_value_heads")
    if heads % kv != 0:
        raise ValueError(f"{heads} heads cannot be split into groups of num_key_value_heads={kv}")
    return "MHA" if kv == heads else "GQA"


def kv_bytes_per_token(config: dict, dtype_bytes: int = 2) -> int:
    layers = _need(config, "num_hidden_layers")
    kind = attention_kind(config)
    if kind == "MLA":
        per_layer = _need(config, "kv_lora_rank") + _need(config, "qk_rope_head_dim")
    else:
        heads = config["num_attention_heads"]
        kv = heads if config.get("num_key_value_heads") is None else config["num_key_value_heads"]
        if config.get("head_dim") is None:
            hidden = _need(config, "hidden_size")
            if hidden % heads:
                raise ValueError(f"hidden_size {hidden} does not split into {heads} heads")
            head_dim = hidden // heads
        else:
            head_dim = _need(config, "head_dim")
        per_layer = 2 * kv * head_dim
    if type(dtype_bytes) is not int or dtype_bytes <= 0:
        raise ValueError(f"dtype_bytes = {dtype_bytes!r} is not a positive integer")
    return layers * per_layer * dtype_bytes
