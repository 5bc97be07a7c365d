"""Tests of exercise 230: softmax top-k routing."""
import math
import random

import pytest

import submission as sub

EXAMPLE = [[0.0, math.log(3.0), 0.0, math.log(4.0)], [1.0, 1.0, 1.0, 1.0]]


def close(a, b, tol=1e-9):
    return len(a) == len(b) and all(len(x) == len(y) and all(abs(u - v) <= tol for u, v in zip(x, y))
                                    for x, y in zip(a, b))


def test_example_plain():
    w, ids = sub.topk_softmax(EXAMPLE, 2, renormalize=False)
    assert ids == [[3, 1], [0, 1]]
    assert close(w, [[4 / 9, 3 / 9], [0.25, 0.25]])


def test_example_renormalized():
    w, ids = sub.topk_softmax(EXAMPLE, 2, renormalize=True)
    assert ids == [[3, 1], [0, 1]]
    assert close(w, [[4 / 7, 3 / 7], [0.5, 0.5]])


def test_ties_go_to_the_lower_expert():
    w, ids = sub.topk_softmax([[0.5, 2.0, 0.5, 2.0, 0.5, 2.0]], 4, renormalize=False)
    assert ids == [[1, 3, 5, 0]]
    w, ids = sub.topk_softmax([[0.0] * 8], 3, renormalize=True)
    assert ids == [[0, 1, 2]] and close(w, [[1 / 3] * 3])


def test_descending_order():
    w, ids = sub.topk_softmax([[0.1, 0.3, 0.2, 0.9, -1.0]], 5, renormalize=False)
    assert ids == [[3, 1, 2, 0, 4]]
    assert all(a >= b for a, b in zip(w[0], w[0][1:]))


def test_large_logits_do_not_overflow():
    w, ids = sub.topk_softmax([[1000.0, 999.0, 0.0]], 2, renormalize=False)
    e = math.exp(-1.0)
    total = 1 + e + math.exp(-1000.0)
    assert ids == [[0, 1]] and close(w, [[1 / total, e / total]], 1e-12)


def test_empty_batch():
    assert sub.topk_softmax([], 2, renormalize=True) == ([], [])


@pytest.mark.parametrize("logits, k", [
    ([[1.0, 2.0]], 0), ([[1.0, 2.0]], 3), ([[1.0, 2.0], [1.0]], 1), ([[]], 1),
])
def test_bad_input_raises(logits, k):
    with pytest.raises(ValueError):
        sub.topk_softmax(logits, k, renormalize=True)


def reference(row, k, renormalize):
    probs = [math.exp(v) for v in row]
    s = sum(probs)
    probs = [p / s for p in probs]
    order = sorted(range(len(row)), key=lambda e: (-probs[e], e))[:k]
    w = [probs[e] for e in order]
    if renormalize:
        w = [v / sum(w) for v in w]
    return w, order


@pytest.mark.parametrize("seed", range(10))
def test_random_batches(seed):
    rng = random.Random(seed)
    num_experts = rng.choice([2, 4, 8, 16, 60])
    k = rng.randint(1, min(num_experts, 8))
    renormalize = seed % 2 == 0
    # Coarse values make ties common; a few rows are fully continuous.
    logits = [[rng.choice([rng.randint(-3, 3) / 2, rng.gauss(0, 2)]) for _ in range(num_experts)]
              for _ in range(rng.randint(1, 12))]
    w, ids = sub.topk_softmax(logits, k, renormalize)
    assert len(w) == len(ids) == len(logits)
    for row, got_w, got_ids in zip(logits, w, ids):
        exp_w, exp_ids = reference(row, k, renormalize)
        assert got_ids == exp_ids
        assert close([got_w], [exp_w], 1e-9)
