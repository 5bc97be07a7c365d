"""Exercise 270: KV-cache bytes per token for MHA, GQA and MLA. Keep the names."""
from __future__ import annotations


def attention_kind(config: dict) -> str:
    """"MLA" (a kv_lora_rank that is not None), else "MHA" (no / None / all KV heads) or "GQA"."""
    # TODO: MLA first; then compare num_key_value_heads with num_attention_heads (validate both)
    raise NotImplementedError("attention_kind")


def kv_bytes_per_token(config: dict, dtype_bytes: int = 2) -> int:
    """Bytes one token takes in the KV cache over all layers; ValueError naming the bad field."""
    # TODO: validate dtype_bytes and num_hidden_layers (positive ints, not bools)
    # TODO: MLA: L * (kv_lora_rank + qk_rope_head_dim) * dtype_bytes, one latent per token and layer
    # TODO: MHA / GQA: 2 * L * num_kv_heads * head_dim * dtype_bytes; head_dim from config or hidden_size // heads
    raise NotImplementedError("kv_bytes_per_token")
