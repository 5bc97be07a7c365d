"""Which batch sizes get a graph, and which graph a batch is padded up to (vLLM's rules).

Pure Python: no torch.
"""
from __future__ import annotations

import bisect
from typing import Sequence


def default_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int | None = None) -> list[int]:
    """vLLM v0.11.0's default schedule: ``[1, 2, 4] + range(8, N + 1, 8)`` with ``N = min(2 * max_num_seqs, 512)``,
    without sizes above ``max_num_batched_tokens`` (a step never holds more tokens than that)."""
    n = min(2 * max_num_seqs, 512)
    sizes = [1, 2, 4] + list(range(8, n + 1, 8))
    return [s for s in sizes if max_num_batched_tokens is None or s <= max_num_batched_tokens]


def check_capture_sizes(sizes: Sequence[int]) -> list[int]:
    """The sizes sorted ascending without duplicates; ValueError unless they are positive integers."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
        raise ValueError(f"cudagraph_capture_sizes must be a list of positive integers, got {sizes!r}")
    if not sizes:
        raise ValueError("cudagraph_capture_sizes is empty; give at least one batch size, or enforce_eager=True")
    bad = [s for s in sizes if not isinstance(s, int) or isinstance(s, bool) or s < 1]
    if bad:
        raise ValueError(f"cudagraph_capture_sizes must be positive integers; these are not: {bad[:5]}")
    return sorted(set(sizes))


def padded_batch_size(num_seqs: int, sizes: Sequence[int]) -> int | None:
    """The smallest capture size >= ``num_seqs`` (``sizes`` ascending), or None when it exceeds them all (eager)."""
    i = bisect.bisect_left(sizes, num_seqs)
    return sizes[i] if i < len(sizes) else None
