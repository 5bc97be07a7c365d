# Correct: Counts continuous batching with a heap of the times each slot becomes free (a request starts when the earliest slot frees and ends len steps later), and static batching with an explicit loop over groups.
"""Exercise 226: continuous vs static batching, counted in steps."""
from __future__ import annotations

from collections import deque


def static_steps(output_lens: list[int], batch_size: int) -> int:
    total, group = 0, []
    for n in output_lens:
        group.append(n)
        if len(group) == batch_size:
            total, group = total + max(group), []
    return total + (max(group) if group else 0)


def continuous_steps(output_lens: list[int], batch_size: int) -> int:
    import heapq

    free_at = [0] * min(batch_size, len(output_lens))
    last = 0
    for n in output_lens:
        start = heapq.heappop(free_at)
        last = max(last, start + n)
        heapq.heappush(free_at, start + n)
    return last
