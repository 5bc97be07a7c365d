"""Which slice of each weight a tensor-parallel rank holds: pure arithmetic, no torch.

The rules are vLLM's (``vllm/model_executor/layers/linear.py`` and ``vocab_parallel_embedding.py``):

- query heads are split evenly: ``num_heads // tp`` per rank;
- KV heads are split when there are at least as many as ranks (``num_kv_heads // tp`` each), otherwise each
  rank holds one KV head and ``tp // num_kv_heads`` consecutive ranks hold the same one (replication);
- the vocabulary is padded to a multiple of 64 and split evenly; the padding rows are zeros (one rank
  keeps the vocabulary as it is, where vLLM pads it too).

- each rank's KV cache holds only its KV heads; the engine sizes it per rank with :func:`kv_cache_plan`.

The layers call :func:`head_shard` and :func:`vocab_range` through this module (``sharding.head_shard``), in
the driver (checking the config) and in every worker, and the engine calls ``sharding.kv_cache_plan``, so a
replacement set here takes effect everywhere.
"""
from __future__ import annotations

from typing import Any, NamedTuple

VOCAB_PADDING = 64


def divide(numerator: int, denominator: int, what: str = "size") -> int:
    """``numerator // denominator``, or a ValueError when it does not divide evenly."""
    if numerator % denominator:
        raise ValueError(f"{what}={numerator} is not divisible by tensor_parallel_size={denominator}")
    return numerator // denominator


class HeadShard(NamedTuple):
    """The attention heads one rank holds: query heads ``[q_start, q_start + num_heads)`` of the checkpoint,
    KV heads ``[kv_start, kv_start + num_kv_heads)`` (the same KV head on ``kv_replicas`` ranks).
    A head is ``head_dim`` rows of ``q_proj`` / ``k_proj`` / ``v_proj``."""
    num_heads: int
    num_kv_heads: int
    q_start: int
    kv_start: int
    kv_replicas: int


def _check_rank(tp_size: int, tp_rank: int) -> None:
    if tp_size < 1 or not 0 <= tp_rank < tp_size:
        raise ValueError(f"need tensor_parallel_size >= 1 and 0 <= rank < it, got {tp_size} and rank {tp_rank}")


def kv_split(total_kv_heads: int, tp_size: int) -> tuple[int, int]:
    """``(KV heads per rank, ranks holding each one)``: split when there are more KV heads than ranks, else one
    per rank, replicated on ``tp_size // total_kv_heads`` ranks."""
    if tp_size >= total_kv_heads:
        if tp_size % total_kv_heads:
            raise ValueError(f"tensor_parallel_size={tp_size} is larger than num_key_value_heads={total_kv_heads} "
                             "but not a multiple of it, so the KV heads cannot be replicated evenly")
        return 1, tp_size // total_kv_heads
    return divide(total_kv_heads, tp_size, "num_key_value_heads"), 1


def head_shard(total_heads: int, total_kv_heads: int, tp_size: int, tp_rank: int) -> HeadShard:
    """Rank ``tp_rank``'s heads (vLLM's ``QKVParallelLinear``): query heads split evenly, KV heads by
    :func:`kv_split`; the ranks that share a KV head are neighbours."""
    _check_rank(tp_size, tp_rank)
    if min(total_heads, total_kv_heads) < 1 or total_heads % total_kv_heads:
        raise ValueError(f"num_attention_heads={total_heads} must be a positive multiple of "
                         f"num_key_value_heads={total_kv_heads}")
    num_heads = divide(total_heads, tp_size, "num_attention_heads")
    num_kv, replicas = kv_split(total_kv_heads, tp_size)
    return HeadShard(num_heads, num_kv, tp_rank * num_heads, tp_rank // replicas * num_kv, replicas)


def kv_cache_plan(num_layers: int, num_kv_heads: int, head_dim: int, tp_size: int, block_size: int,
                  budget_bytes: int, dtype_bytes: int = 2) -> dict:
    """One rank's paged KV cache in ``budget_bytes``: ``kv_heads_per_rank``, ``block_bytes`` (K and V of every
    layer), ``num_blocks`` (whole blocks), ``tokens`` and ``replication`` (KV-head copies over all ranks / KV heads).
    Raises ValueError for an argument below 1, KV heads that split unevenly, or a budget below one block."""
    args = (num_layers, num_kv_heads, head_dim, tp_size, block_size, budget_bytes, dtype_bytes)
    if min(args) < 1:
        raise ValueError(f"every argument of kv_cache_plan must be >= 1, got {args}")
    heads, _ = kv_split(num_kv_heads, tp_size)
    block_bytes = 2 * num_layers * block_size * heads * head_dim * dtype_bytes
    if budget_bytes < block_bytes:
        raise ValueError(f"a KV cache budget of {budget_bytes} bytes per rank cannot hold one block of "
                         f"{block_bytes} bytes; use a smaller block_size")
    num_blocks = budget_bytes // block_bytes
    return {"kv_heads_per_rank": heads, "block_bytes": block_bytes, "num_blocks": num_blocks,
            "tokens": num_blocks * block_size, "replication": tp_size * heads / num_kv_heads}


def vocab_range(vocab_size: int, tp_size: int, tp_rank: int, padding: int = VOCAB_PADDING) -> tuple[int, int, int]:
    """``(start, rows, real_rows)``: this rank holds token ids ``[start, start + rows)`` of the vocabulary padded
    to a multiple of ``padding``, of which the first ``real_rows`` exist in the checkpoint. One rank = no padding."""
    _check_rank(tp_size, tp_rank)
    if tp_size == 1:
        return 0, vocab_size, vocab_size
    padded = -(-vocab_size // padding) * padding
    rows = divide(padded, tp_size, "padded vocab_size")
    start = tp_rank * rows
    return start, rows, max(0, min(rows, vocab_size - start))


def check_tensor_parallel(config: Any, tp_size: int, expert_parallel: bool = False) -> None:
    """Raise ValueError, naming the field, if a model with this config cannot be split over ``tp_size`` ranks
    (with ``expert_parallel``, MoE experts are placed whole instead of split)."""
    head_shard(config.num_attention_heads, config.num_key_value_heads, tp_size, 0)
    divide(config.intermediate_size, tp_size, "intermediate_size")
    moe = getattr(config, "moe", None)
    if moe is not None:
        if not expert_parallel:
            divide(moe.intermediate_size, tp_size, "moe intermediate_size")
        if moe.shared_expert_intermediate_size:
            divide(moe.shared_expert_intermediate_size, tp_size, "shared_expert_intermediate_size")
    vocab_range(config.vocab_size, tp_size, 0)
