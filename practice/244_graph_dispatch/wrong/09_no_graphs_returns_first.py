# Mistake: Returns None at once when there are no graphs, so a bad step is never checked when capture_sizes is empty.
from __future__ import annotations

import bisect


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    if not capture_sizes:
        return None
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"a step needs at least one request of >= 1 token, got {num_scheduled_tokens}")
    if any(n != 1 for n in num_scheduled_tokens):
        return None
    i = bisect.bisect_left(capture_sizes, len(num_scheduled_tokens))
    return capture_sizes[i] if i < len(capture_sizes) else None
