"""Exercise 240: the capture-size schedule and the padded-size lookup. Keep the names."""
from __future__ import annotations

import bisect  # noqa: F401  (padded_size should use it)


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, user_sizes: list[int] | None = None) -> list[int]:
    # TODO 1: the default list: N = min(2 * max_num_seqs, 512); [1, 2, 4] + 8, 16, ... up to N;
    #         (1, 2, 4 always); drop sizes above max_num_batched_tokens
    # TODO 2: user sizes: check >= 1, deduplicate, sort, drop those above max_num_batched_tokens
    raise NotImplementedError("capture_sizes")


def padded_size(num_reqs: int, sizes: list[int]) -> int | None:
    # TODO 3: the smallest size >= num_reqs (bisect), None when num_reqs is above the largest
    raise NotImplementedError("padded_size")
