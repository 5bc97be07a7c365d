# Mistake: Makes every chunk ceil(L / N) long, so the last chunks are short or empty instead of the first L % N being one longer.
from __future__ import annotations

def chunk_bounds(length: int, n: int) -> list[tuple[int, int]]:
    """[start, stop) of each of n chunks, the first length % n one element longer."""
    base, extra = divmod(length, n)
    bounds, start = [], 0
    for c in range(n):
        stop = min(length, start + -(-length // n))
        bounds.append((start, stop))
        start = stop
    return bounds


def ring_all_reduce(buffers: list[list[float]]) -> list[list[list[float]]]:
    if not buffers:
        raise ValueError("need at least one rank's buffer")
    if len({len(b) for b in buffers}) != 1:
        raise ValueError(f"every rank's vector must have the same length, got {[len(b) for b in buffers]}")
    n = len(buffers)
    bounds = chunk_bounds(len(buffers[0]), n)
    state = [list(b) for b in buffers]
    history = [[list(b) for b in state]]

    def step(chunk_of, add: bool) -> None:
        sent = [(r, chunk_of(r), state[r][slice(*bounds[chunk_of(r)])]) for r in range(n)]
        for r, c, data in sent:
            start, _ = bounds[c]
            dst = state[(r + 1) % n]
            for i, v in enumerate(data):
                dst[start + i] = dst[start + i] + v if add else v
        history.append([list(b) for b in state])

    for s in range(n - 1):
        step(lambda r: (r - s) % n, add=True)
    for s in range(n - 1):
        step(lambda r: (r + 1 - s) % n, add=False)
    return history
