"""Which MoE communication a step uses on Ascend: vllm-ascend v0.11.0's per-step rule, as ``moe_comm="auto"``.

vllm-ascend decides before every forward (``NPUModelRunner._select_moe_comm_method(num_input_tokens, with_prefill)``,
``vllm_ascend/worker/model_runner_v1.py`` at tag v0.11.0) and puts the choice in the forward context:

- no expert parallelism: all-gather;
- A2 (SoC versions 220-225): MC2 when the step has at most ``mc2_tokens_capacity`` tokens *and* the world spans at
  least 16 NPUs, else all-to-all for ``w4a8_dynamic`` checkpoints (no all-gather EP for them), else all-gather;
- A3 (250-255): MC2 up to the capacity, all-to-all above it; any other chip is an error;
- an all-gather step with prefill becomes the naive multicast unless sequence parallelism is on.

The capacity (``_init_mc2_tokens_capacity``): the largest graph capture size (vLLM keeps them sorted descending and
reads ``[0]``), or without graphs ``min(max_num_reqs * uniform_decode_query_len, 512)``, rounded up to a multiple of
the TP size. :func:`select_moe_comm_method` and :func:`mc2_tokens_capacity` are looked up on this module at call
time, so a replacement set here (exercise 259, ``practice/judge.py engine``) is the one the engine runs.

The engine's exchanges always split the tokens across the ranks before the MoE layer (sequence-parallel style,
``moe_dispatch``), so it asks with ``sequence_parallel=True`` and never gets the naive multicast.
"""
from __future__ import annotations

import importlib
import sys
from typing import Sequence

MOE_COMM_CHOICES = ("allgather", "alltoall", "mc2", "naive_multicast")
MC2_MAX_TOKENS = 512    # "To save memory, we cap the max number of tokens to 512" (v0.11.0, without graphs)


def soc_version() -> str:
    """``"A2"``, ``"A3"`` or ``"UNDEFINED"`` from ``torch_npu.npu.get_soc_version()``, with vllm-ascend v0.11.0's
    ranges (``vllm_ascend/utils.py`` ``init_ascend_soc_version``)."""
    version = importlib.import_module("torch_npu").npu.get_soc_version()
    if 220 <= version <= 225:
        return "A2"
    if 250 <= version <= 255:
        return "A3"
    return "UNDEFINED"


def mc2_tokens_capacity(max_num_seqs: int, capture_sizes: Sequence[int], tensor_parallel_size: int,
                        uniform_decode_query_len: int = 1) -> int:
    """The most tokens a step may have and still use MC2: the largest capture size, or without graphs
    ``min(max_num_seqs * uniform_decode_query_len, 512)``, rounded up to a multiple of ``tensor_parallel_size``."""
    if capture_sizes:
        max_tokens = max(capture_sizes)
    else:
        max_tokens = min(max_num_seqs * uniform_decode_query_len, MC2_MAX_TOKENS)
    return (max_tokens + tensor_parallel_size - 1) // tensor_parallel_size * tensor_parallel_size


def select_moe_comm_method(num_tokens: int, with_prefill: bool, soc_version: str, *, expert_parallel: bool,
                           mc2_tokens_capacity: int, world_size: int, quant_type: str | None = None,
                           sequence_parallel: bool = False) -> str:
    """One of :data:`MOE_COMM_CHOICES` for a step of ``num_tokens`` tokens (vllm-ascend v0.11.0's rule).

    ``soc_version`` is ``"A2"`` or ``"A3"`` (another value is a ``ValueError`` under expert parallelism);
    ``world_size`` is the number of ranks across data parallelism (``world_size_across_dp``)."""
    if not expert_parallel:
        method = "allgather"
    elif soc_version == "A2":
        if num_tokens <= mc2_tokens_capacity and world_size >= 16:
            method = "mc2"
        else:
            method = "alltoall" if quant_type == "w4a8_dynamic" else "allgather"
    elif soc_version == "A3":
        method = "mc2" if num_tokens <= mc2_tokens_capacity else "alltoall"
    else:
        raise ValueError(f"unsupported SoC version {soc_version!r}: the rule knows 'A2' and 'A3'")
    if method == "allgather" and with_prefill and not sequence_parallel:
        method = "naive_multicast"
    return method


def is_prefill_step(query_lens: Sequence[int], seq_lens: Sequence[int]) -> bool:
    """vllm-ascend's ``with_prefill``: the step is not decode-only. Decode-only = one new token per request and not
    every request starting from an empty cache (that is ``PrefillNoCache``, a prefill even with one-token prompts)."""
    fresh = all(q == s for q, s in zip(query_lens, seq_lens))
    return fresh or any(q != 1 for q in query_lens)


def moe_comm_for_step(query_lens: Sequence[int], seq_lens: Sequence[int], graph_size: int | None, *,
                      tensor_parallel_size: int, expert_parallel: bool, max_num_seqs: int,
                      capture_sizes: Sequence[int]) -> str:
    """The method of one engine step (``moe_comm="auto"``): the driver counts it, every worker runs it. The step's
    token count is its graph's size when it replays one (vllm-ascend's padded ``num_input_tokens``)."""
    this = sys.modules[__name__]        # at call time: a replacement set on the module is the one used
    capacity = this.mc2_tokens_capacity(max_num_seqs, list(capture_sizes), tensor_parallel_size)
    soc = soc_version() if expert_parallel else "UNDEFINED"
    return this.select_moe_comm_method(graph_size or sum(query_lens), is_prefill_step(query_lens, seq_lens), soc,
                                       expert_parallel=expert_parallel, mc2_tokens_capacity=capacity,
                                       world_size=tensor_parallel_size, sequence_parallel=True)
