"""Tests of exercise 226: continuous vs static batching, counted in steps."""
import random

import pytest

from submission import continuous_steps, static_steps


def test_example_small():
    assert static_steps([3, 1, 1, 1], 2) == 4
    assert continuous_steps([3, 1, 1, 1], 2) == 3


def test_example_long_tail():
    assert static_steps([10, 2, 2, 2, 2, 10], 2) == 22
    assert continuous_steps([10, 2, 2, 2, 2, 10], 2) == 18


def test_edges():
    assert static_steps([], 4) == 0 and continuous_steps([], 4) == 0
    assert static_steps([5, 5, 5], 1) == continuous_steps([5, 5, 5], 1) == 15
    assert static_steps([1, 7, 2], 8) == continuous_steps([1, 7, 2], 8) == 7


def reference_continuous(lens, b):
    left = list(lens)
    slots, nxt, steps = [], 0, 0
    while nxt < len(left) or slots:
        while nxt < len(left) and len(slots) < b:
            slots.append(nxt)
            nxt += 1
        for i in slots:
            left[i] -= 1
        slots = [i for i in slots if left[i] > 0]
        steps += 1
    return steps


@pytest.mark.parametrize("seed", range(6))
def test_random_traces(seed):
    rng = random.Random(seed)
    for _ in range(60):
        lens = [rng.choice([rng.randint(1, 5), rng.randint(20, 60)]) for _ in range(rng.randint(0, 30))]
        b = rng.randint(1, 8)
        want_static = sum(max(lens[i:i + b]) for i in range(0, len(lens), b))
        assert static_steps(list(lens), b) == want_static
        got = continuous_steps(list(lens), b)
        assert got == reference_continuous(lens, b), (lens, b)
        assert got <= want_static
