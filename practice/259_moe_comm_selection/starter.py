"""Exercise 259: vllm-ascend v0.11.0's per-step choice of the MoE communication. Keep the names."""
from __future__ import annotations

from typing import Sequence


def mc2_tokens_capacity(max_num_seqs: int, capture_sizes: Sequence[int], tensor_parallel_size: int,
                        uniform_decode_query_len: int = 1) -> int:
    """The most tokens a step may have and still use MC2; see problem.md."""
    # TODO: the largest capture size, or min(max_num_seqs * uniform_decode_query_len, 512) without graphs
    # TODO: rounded up to a multiple of tensor_parallel_size
    raise NotImplementedError("mc2_tokens_capacity")


def select_moe_comm_method(num_tokens: int, with_prefill: bool, soc_version: str, *, expert_parallel: bool,
                           mc2_tokens_capacity: int, world_size: int, quant_type: str | None = None,
                           sequence_parallel: bool = False) -> str:
    """"allgather", "alltoall", "mc2" or "naive_multicast" for this step; see problem.md."""
    # TODO: no EP; A2; A3; another chip
    # TODO: all-gather with prefill and without sequence parallelism
    raise NotImplementedError("select_moe_comm_method")
