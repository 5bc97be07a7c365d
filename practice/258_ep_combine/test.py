"""Tests of exercise 258: undo the dispatch order and take the weighted sum per token."""
import random

import pytest

import submission as sub


def test_example():
    got = sub.ep_combine([1, 2, 0, 3], [[10.0], [20.0], [30.0], [40.0]], [[0.75, 0.25], [0.5, 0.5]])
    assert got == [[25.0], [30.0]]


def test_identity_order_and_rows_are_separate():
    got = sub.ep_combine([0, 1, 2], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[1.0], [2.0], [0.5]])
    assert got == [[1.0, 2.0], [6.0, 8.0], [2.5, 3.0]]
    got[0][0] = 99.0
    assert got[1] == [6.0, 8.0]


def test_no_tokens():
    assert sub.ep_combine([], [], []) == []


@pytest.mark.parametrize("order, returned", [
    ([0, 0, 1, 2], [[1.0]] * 4),        # pair 0 twice, pair 3 never
    ([0, 1, 2, 4], [[1.0]] * 4),        # pair 4 does not exist
    ([0, 1, 2], [[1.0]] * 3),           # a pair is missing
    ([0, 1, 2, 3], [[1.0]] * 3),        # a row is missing
])
def test_bad_input_raises(order, returned):
    with pytest.raises(ValueError):
        sub.ep_combine(order, returned, [[0.5, 0.5], [0.5, 0.5]])


@pytest.mark.parametrize("seed", range(10))
def test_random_dispatch_and_combine(seed):
    rng = random.Random(seed)
    T, K, H = rng.randint(1, 7), rng.randint(1, 4), rng.randint(1, 5)
    weights = [[rng.randint(1, 16) / 16 for _ in range(K)] for _ in range(T)]
    outputs = {p: [rng.randint(-64, 64) / 8 for _ in range(H)] for p in range(T * K)}   # expert output per pair
    order = list(range(T * K))
    rng.shuffle(order)
    got = sub.ep_combine(order, [list(outputs[p]) for p in order], weights)
    expected = [[sum(weights[t][k] * outputs[t * K + k][h] for k in range(K)) for h in range(H)] for t in range(T)]
    assert len(got) == T
    for g, e in zip(got, expected):
        assert g == pytest.approx(e)
