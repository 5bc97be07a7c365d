"""Tests of exercise 251: ring all-reduce as reduce-scatter then all-gather, snapshot by snapshot."""
import random

import pytest

import submission as sub


def test_example():
    h = sub.ring_all_reduce([[1, 2, 3], [10, 20, 30], [100, 200, 300]])
    assert len(h) == 5
    assert h[0] == [[1, 2, 3], [10, 20, 30], [100, 200, 300]]
    assert h[1] == [[1, 2, 303], [11, 20, 30], [100, 220, 300]]
    assert h[2] == [[1, 222, 303], [11, 20, 333], [111, 220, 300]]
    assert h[4] == [[111, 222, 333]] * 3


def test_single_rank_is_a_copy():
    data = [[4, 5]]
    h = sub.ring_all_reduce(data)
    assert h == [[[4, 5]]]
    h[0][0][0] = 9
    assert data == [[4, 5]]


def test_input_is_not_modified():
    data = [[1, 2], [3, 4]]
    sub.ring_all_reduce(data)
    assert data == [[1, 2], [3, 4]]


def test_uneven_chunks_first_ones_longer():
    # L = 5, N = 2: chunks [0, 3) and [3, 5). Step 0: rank 0 sends chunk 0, rank 1 sends chunk 1.
    h = sub.ring_all_reduce([[1, 1, 1, 1, 1], [2, 2, 2, 2, 2]])
    assert h[1] == [[1, 1, 1, 3, 3], [3, 3, 3, 2, 2]]
    assert h[2] == [[3] * 5, [3] * 5]


def test_fewer_elements_than_ranks():
    h = sub.ring_all_reduce([[1, 2], [10, 20], [100, 200], [1000, 2000]])
    assert len(h) == 7 and h[-1] == [[1111, 2222]] * 4


def test_empty_vectors_still_take_every_step():
    assert sub.ring_all_reduce([[], []]) == [[[], []]] * 3


@pytest.mark.parametrize("buffers", [[], [[1, 2], [3]], [[1], [2, 3]], [[1, 2], [3], [4, 5]]])
def test_bad_input_raises(buffers):
    try:
        result = sub.ring_all_reduce(buffers)
    except ValueError:
        return
    pytest.fail(f"ring_all_reduce({buffers}) returned {result!r}; expected a ValueError")


def step_name(k, n):
    """What snapshot k of an n-rank ring is."""
    if k == 0:
        return "history[0] (the input copy)"
    phase, s = ("reduce-scatter", k - 1) if k <= n - 1 else ("all-gather", k - n)
    return f"history[{k}] (after {phase} step s={s})"


def assert_history(got, expected, case):
    """Compare snapshot by snapshot and report only the first step that differs, with the state before it."""
    n = len(expected[0])
    assert isinstance(got, list) and len(got) == len(expected), (
        f"{case}: expected {len(expected)} snapshots (2 (N-1) + 1 for N={n}), got "
        f"{len(got) if isinstance(got, list) else type(got).__name__}")
    for k, (mine, want) in enumerate(zip(got, expected)):
        if mine != want:
            ranks = [r for r in range(n) if not isinstance(mine, list) or r >= len(mine) or mine[r] != want[r]]
            r = ranks[0]
            yours = mine[r] if isinstance(mine, list) and r < len(mine) else mine
            before = f"\n  rank {r} before it: {expected[k - 1][r]}" if k else ""
            raise AssertionError(f"{case}: {step_name(k, n)} is the first snapshot that differs, at ranks {ranks}"
                                 f"{before}\n  rank {r} yours:    {yours}\n  rank {r} expected: {want[r]}")


def reference(buffers):
    """An independent walk through the same schedule, chunk by chunk."""
    n, length = len(buffers), len(buffers[0])
    sizes = [length // n + (c < length % n) for c in range(n)]
    starts = [sum(sizes[:c]) for c in range(n)]
    chunks = [[b[starts[c]:starts[c] + sizes[c]] for c in range(n)] for b in buffers]
    out = [[sum(ch, []) for ch in chunks]]
    for phase in ("rs", "ag"):
        for s in range(n - 1):
            msgs = [(r, (r - s) % n if phase == "rs" else (r + 1 - s) % n) for r in range(n)]
            payload = {(r, c): list(chunks[r][c]) for r, c in msgs}
            for (r, c), data in payload.items():
                d = (r + 1) % n
                chunks[d][c] = [a + b for a, b in zip(chunks[d][c], data)] if phase == "rs" else data
            out.append([sum(ch, []) for ch in chunks])
    return out


@pytest.mark.parametrize("seed", range(10))
def test_random_rings_match_the_schedule(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 6)
    length = rng.randint(1, 13)
    buffers = [[rng.randint(-50, 50) for _ in range(length)] for _ in range(n)]
    case = f"seed={seed}, buffers={buffers}"
    h = sub.ring_all_reduce(buffers)
    assert_history(h, reference(buffers), case)
    total = [sum(col) for col in zip(*buffers)]
    assert h[-1] == [total] * n
    size = [length // n + (c < length % n) for c in range(n)]
    for r in range(n):                       # after reduce-scatter rank r owns chunk (r + 1) % n
        c = (r + 1) % n
        start = sum(size[:c])
        assert h[n - 1][r][start:start + size[c]] == total[start:start + size[c]], f"{case}: rank {r}, chunk {c}"
