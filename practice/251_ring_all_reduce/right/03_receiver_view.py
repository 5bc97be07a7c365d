# Correct: loops over receivers instead of senders (rank d gets its chunk from d - 1), from a copy of the state at the start of the step.
from __future__ import annotations


def ring_all_reduce(buffers):
    lengths = [len(b) for b in buffers]
    if not lengths:
        raise ValueError("buffers is empty")
    if min(lengths) != max(lengths):
        raise ValueError(f"lengths differ: {lengths}")
    n, length = len(buffers), lengths[0]
    base, extra = divmod(length, n)

    def span(c):
        start = c * base + min(c, extra)
        return start, start + base + (1 if c < extra else 0)

    state = [b[:] for b in buffers]
    history = [[b[:] for b in state]]
    for k in range(2 * (n - 1)):
        before = [b[:] for b in state]
        for d in range(n):
            src = (d - 1) % n
            s = k if k < n - 1 else k - (n - 1)
            c = (src - s) % n if k < n - 1 else (src + 1 - s) % n
            a, z = span(c)
            for i in range(a, z):
                state[d][i] = before[d][i] + before[src][i] if k < n - 1 else before[src][i]
        history.append([b[:] for b in state])
    return history
