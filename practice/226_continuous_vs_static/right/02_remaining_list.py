# Correct: Simulates continuous batching with a list of the remaining lengths and an index of the next waiting request.
"""Exercise 226: continuous vs static batching, counted in steps."""
from __future__ import annotations

from collections import deque


def static_steps(output_lens: list[int], batch_size: int) -> int:
    return sum(max(output_lens[i:i + batch_size]) for i in range(0, len(output_lens), batch_size))


def continuous_steps(output_lens: list[int], batch_size: int) -> int:
    nxt, batch, steps = 0, [], 0
    while nxt < len(output_lens) or batch:
        while len(batch) < batch_size and nxt < len(output_lens):
            batch.append(output_lens[nxt])
            nxt += 1
        steps += 1
        batch = [left - 1 for left in batch]
        batch = [left for left in batch if left > 0]
    return steps
