# Correct: early returns, the prefill rule applied to each all-gather answer.
from __future__ import annotations

import math
from typing import Sequence


def mc2_tokens_capacity(max_num_seqs: int, capture_sizes: Sequence[int], tensor_parallel_size: int,
                        uniform_decode_query_len: int = 1) -> int:
    biggest = sorted(capture_sizes, reverse=True)[0] if capture_sizes else min(max_num_seqs * uniform_decode_query_len, 512)
    return math.ceil(biggest / tensor_parallel_size) * tensor_parallel_size


def select_moe_comm_method(num_tokens: int, with_prefill: bool, soc_version: str, *, expert_parallel: bool,
                           mc2_tokens_capacity: int, world_size: int, quant_type: str | None = None,
                           sequence_parallel: bool = False) -> str:
    gather = "naive_multicast" if with_prefill and not sequence_parallel else "allgather"
    if not expert_parallel:
        return gather
    fits = num_tokens <= mc2_tokens_capacity
    if soc_version == "A3":
        return "mc2" if fits else "alltoall"
    if soc_version == "A2":
        if fits and world_size >= 16:
            return "mc2"
        return "alltoall" if quant_type == "w4a8_dynamic" else gather
    raise ValueError(f"SoC {soc_version!r} is neither A2 nor A3")
