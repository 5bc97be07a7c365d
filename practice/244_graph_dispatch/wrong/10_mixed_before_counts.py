# Mistake: Returns None for any count other than 1 before checking the counts, so a step with a 0-token request next to a prefill runs eagerly.
from __future__ import annotations

import bisect


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    if not num_scheduled_tokens:
        raise ValueError("empty step")
    if any(n > 1 for n in num_scheduled_tokens):
        return None
    if min(num_scheduled_tokens) < 1:
        raise ValueError(f"a step needs requests of >= 1 token, got {num_scheduled_tokens}")
    i = bisect.bisect_left(capture_sizes, len(num_scheduled_tokens))
    return capture_sizes[i] if i < len(capture_sizes) else None
