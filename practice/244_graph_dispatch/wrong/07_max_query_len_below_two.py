# Mistake: Calls a step uniform decode when no request has more than one token, without checking counts below 1 separately.
from __future__ import annotations

import bisect


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    if not num_scheduled_tokens:
        raise ValueError("a step needs at least one request")
    if max(num_scheduled_tokens) > 1:
        return None
    i = bisect.bisect_left(capture_sizes, len(num_scheduled_tokens))
    return capture_sizes[i] if i < len(capture_sizes) else None
