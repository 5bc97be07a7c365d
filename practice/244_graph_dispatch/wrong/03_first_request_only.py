# Mistake: Decides uniform decode from the first request only, so a mixed batch whose first request decodes replays.
from __future__ import annotations

import bisect


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"a step needs at least one request of >= 1 token, got {num_scheduled_tokens}")
    if num_scheduled_tokens[0] != 1:
        return None
    i = bisect.bisect_left(capture_sizes, len(num_scheduled_tokens))
    return capture_sizes[i] if i < len(capture_sizes) else None
