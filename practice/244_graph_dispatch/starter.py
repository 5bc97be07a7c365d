"""Exercise 244: which graph a step replays, or None for eager. Keep the names."""
from __future__ import annotations

import bisect  # noqa: F401  (the lookup should use it)


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    # TODO 1: ValueError for an empty step or a count below 1, checked first (whatever capture_sizes is)
    # TODO 2: not a uniform decode batch (some request has != 1 token): None
    # TODO 3: the smallest capture size >= the number of requests (bisect), None when there is none
    raise NotImplementedError("dispatch_graph")
