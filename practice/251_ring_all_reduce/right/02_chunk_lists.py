# Correct: keeps every rank's vector as a list of chunks, receives in reverse rank order, and flattens for each snapshot.
from __future__ import annotations


def ring_all_reduce(buffers):
    if not buffers or any(len(b) != len(buffers[0]) for b in buffers[1:]):
        raise ValueError(f"need one or more vectors of one length, got lengths {[len(b) for b in buffers]}")
    n, length = len(buffers), len(buffers[0])
    cuts, pos = [], 0
    for c in range(n):
        size = length // n + (1 if c < length % n else 0)
        cuts.append((pos, pos + size))
        pos += size
    chunks = [[list(b[a:z]) for a, z in cuts] for b in buffers]

    def snapshot():
        return [[v for chunk in rank for v in chunk] for rank in chunks]

    history = [snapshot()]
    for s in range(n - 1):
        outgoing = [(r, (r - s) % n, list(chunks[r][(r - s) % n])) for r in range(n)]
        for r, c, data in reversed(outgoing):
            mine = chunks[(r + 1) % n][c]
            chunks[(r + 1) % n][c] = [a + b for a, b in zip(mine, data)]
        history.append(snapshot())
    for s in range(n - 1):
        outgoing = [(r, (r + 1 - s) % n, list(chunks[r][(r + 1 - s) % n])) for r in range(n)]
        for r, c, data in reversed(outgoing):
            chunks[(r + 1) % n][c] = data
        history.append(snapshot())
    return history
