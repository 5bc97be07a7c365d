"""Exercise 257: one rank's paged KV cache under tensor parallelism. Keep the names."""
from __future__ import annotations


def kv_cache_plan(num_layers: int, num_kv_heads: int, head_dim: int, tp_size: int, block_size: int,
                  budget_bytes: int, dtype_bytes: int = 2) -> dict:
    """{"kv_heads_per_rank", "block_bytes", "num_blocks", "tokens", "replication"} of one rank."""
    # TODO: validate; KV heads per rank (split, or one replicated head)
    # TODO: bytes of one block (K and V), whole blocks in the budget, tokens, replication
    raise NotImplementedError("kv_cache_plan")
