# Correct: the fallback of each chip in a table, the capacity with ceil division by negation.
from __future__ import annotations

from typing import Sequence

FALLBACK = {"A2": "allgather", "A3": "alltoall"}


def mc2_tokens_capacity(max_num_seqs: int, capture_sizes: Sequence[int], tensor_parallel_size: int,
                        uniform_decode_query_len: int = 1) -> int:
    tokens = max(capture_sizes) if len(capture_sizes) else min(512, max_num_seqs * uniform_decode_query_len)
    return -(-tokens // tensor_parallel_size) * tensor_parallel_size


def select_moe_comm_method(num_tokens: int, with_prefill: bool, soc_version: str, *, expert_parallel: bool,
                           mc2_tokens_capacity: int, world_size: int, quant_type: str | None = None,
                           sequence_parallel: bool = False) -> str:
    if not expert_parallel:
        method = "allgather"
    else:
        if soc_version not in FALLBACK:
            raise ValueError(f"no MoE communication rule for chip {soc_version}")
        mc2_ok = num_tokens <= mc2_tokens_capacity and (soc_version == "A3" or world_size >= 16)
        method = "mc2" if mc2_ok else FALLBACK[soc_version]
        if method == "allgather" and quant_type == "w4a8_dynamic":
            method = "alltoall"
    return "naive_multicast" if method == "allgather" and with_prefill and not sequence_parallel else method
