# Correct: applies each message in place as soon as it is "sent" (allowed: a rank never sends the chunk it receives), deep-copies snapshots.
from __future__ import annotations

import copy


def ring_all_reduce(buffers):
    if len(buffers) == 0:
        raise ValueError("no ranks")
    length = len(buffers[0])
    if not all(len(b) == length for b in buffers):
        raise ValueError("vectors of different lengths")
    n = len(buffers)
    sizes = [length // n + 1 if c < length % n else length // n for c in range(n)]
    starts = [0]
    for size in sizes[:-1]:
        starts.append(starts[-1] + size)
    state = copy.deepcopy(buffers)
    history = [copy.deepcopy(state)]
    for phase in ("reduce-scatter", "all-gather"):
        for s in range(n - 1):
            for r in range(n):
                c = (r - s) % n if phase == "reduce-scatter" else (r + 1 - s) % n
                dst = (r + 1) % n
                for i in range(starts[c], starts[c] + sizes[c]):
                    if phase == "reduce-scatter":
                        state[dst][i] += state[r][i]
                    else:
                        state[dst][i] = state[r][i]
            history.append(copy.deepcopy(state))
    return history
