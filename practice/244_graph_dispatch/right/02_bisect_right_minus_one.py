# Correct: Uses bisect_right on B - 1 (the same index as bisect_left on B) and max() > 1 for the mixed case.
from __future__ import annotations

import bisect


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    if not num_scheduled_tokens:
        raise ValueError("dispatch_graph needs a non-empty step")
    if min(num_scheduled_tokens) <= 0:
        raise ValueError(f"token counts must be positive: {num_scheduled_tokens}")
    if max(num_scheduled_tokens) > 1:
        return None
    i = bisect.bisect_right(capture_sizes, len(num_scheduled_tokens) - 1)
    return None if i == len(capture_sizes) else capture_sizes[i]
