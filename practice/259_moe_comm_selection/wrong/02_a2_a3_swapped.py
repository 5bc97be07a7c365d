# Mistake: Swaps the chips: A2 falls back to all-to-all, A3 to all-gather.
from __future__ import annotations

from typing import Sequence


def mc2_tokens_capacity(max_num_seqs: int, capture_sizes: Sequence[int], tensor_parallel_size: int,
                        uniform_decode_query_len: int = 1) -> int:
    if capture_sizes:
        max_tokens = max(capture_sizes)
    else:
        max_tokens = min(max_num_seqs * uniform_decode_query_len, 512)
    return (max_tokens + tensor_parallel_size - 1) // tensor_parallel_size * tensor_parallel_size


def select_moe_comm_method(num_tokens: int, with_prefill: bool, soc_version: str, *, expert_parallel: bool,
                           mc2_tokens_capacity: int, world_size: int, quant_type: str | None = None,
                           sequence_parallel: bool = False) -> str:
    if not expert_parallel:
        method = "allgather"
    elif soc_version == "A3":
        if num_tokens <= mc2_tokens_capacity and world_size >= 16:
            method = "mc2"
        else:
            method = "alltoall" if quant_type == "w4a8_dynamic" else "allgather"
    elif soc_version == "A2":
        method = "mc2" if num_tokens <= mc2_tokens_capacity else "alltoall"
    else:
        raise ValueError(f"unsupported SoC version {soc_version!r}")
    if method == "allgather" and with_prefill and not sequence_parallel:
        method = "naive_multicast"
    return method
