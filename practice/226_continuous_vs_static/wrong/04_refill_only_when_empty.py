# Mistake: Refills the batch only once every running request has left.
"""Exercise 226: continuous vs static batching, counted in steps."""
from __future__ import annotations

from collections import deque


def static_steps(output_lens: list[int], batch_size: int) -> int:
    return sum(max(output_lens[i:i + batch_size]) for i in range(0, len(output_lens), batch_size))


def continuous_steps(output_lens: list[int], batch_size: int) -> int:
    waiting, running, steps = deque(output_lens), [], 0
    while waiting or running:
        if not running:
            while waiting and len(running) < batch_size:
                running.append(waiting.popleft())
        running = [left - 1 for left in running if left > 1]
        steps += 1
    return steps
