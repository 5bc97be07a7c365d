"""Tests of exercise 223: temperature, top-k and top-p."""
import math
import random

import pytest

from submission import sampling_probs

LOGITS = [math.log(p) for p in [0.1, 0.4, 0.2, 0.3]]


def close(got, want):
    assert len(got) == len(want)
    assert all(abs(g - w) < 1e-9 for g, w in zip(got, want)), (got, want)


def test_example_plain_softmax():
    close(sampling_probs(LOGITS, 1.0, 0, 1.0), [0.1, 0.4, 0.2, 0.3])


def test_example_top_k():
    close(sampling_probs(LOGITS, 1.0, 2, 1.0), [0.0, 4 / 7, 0.0, 3 / 7])


def test_example_top_p():
    close(sampling_probs(LOGITS, 1.0, 0, 0.6), [0.0, 4 / 7, 0.0, 3 / 7])


def test_example_greedy():
    assert sampling_probs(LOGITS, 0.0, 0, 1.0) == [0.0, 1.0, 0.0, 0.0]


def test_greedy_ties_take_the_lowest_index():
    assert sampling_probs([1.0, 3.0, 3.0], 0.0, 5, 0.5) == [0.0, 1.0, 0.0]


def test_temperature_sharpens_and_flattens():
    close(sampling_probs([0.0, math.log(3)], 0.5, 0, 1.0), [0.1, 0.9])
    close(sampling_probs([0.0, math.log(4)], 2.0, -1, 1.0), [1 / 3, 2 / 3])


def test_top_k_keeps_ties_and_ignores_large_k():
    close(sampling_probs([2.0, 1.0, 1.0, 0.0], 1.0, 2, 1.0),
          [math.e / (math.e + 2), 1 / (math.e + 2), 1 / (math.e + 2), 0.0])
    close(sampling_probs(LOGITS, 1.0, 9, 1.0), [0.1, 0.4, 0.2, 0.3])


def test_top_p_always_keeps_the_first_and_runs_after_top_k():
    close(sampling_probs(LOGITS, 1.0, 0, 1e-6), [0.0, 1.0, 0.0, 0.0])
    # top-k 3 leaves 0.4, 0.3, 0.2 -> 4/9, 3/9, 2/9; top-p 0.5: 4/9 < 0.5 keeps the 2nd, 7/9 drops the 3rd
    close(sampling_probs(LOGITS, 1.0, 3, 0.5), [0.0, 4 / 7, 0.0, 3 / 7])


def test_top_p_mass_exactly_reaching_top_p_drops_the_rest():
    # four equal probabilities 0.25 (exact in binary): after two tokens the mass is exactly 0.5
    close(sampling_probs([0.0, 0.0, 0.0, 0.0], 1.0, 0, 0.5), [0.5, 0.5, 0.0, 0.0])
    close(sampling_probs([0.0, 0.0, 0.0, 0.0], 1.0, 0, 0.75), [1 / 3, 1 / 3, 1 / 3, 0.0])


def test_large_logits_do_not_overflow():
    close(sampling_probs([1000.0, 1000.0], 1.0, 0, 1.0), [0.5, 0.5])


def reference(logits, t, k, p):
    if t == 0:
        i = logits.index(max(logits))
        return [float(j == i) for j in range(len(logits))]
    m = max(logits)
    w = [math.exp((x - m) / t) for x in logits]
    pr = [x / sum(w) for x in w]
    if k not in (0, -1) and k < len(pr):
        cut = sorted(pr)[-k]
        pr = [x if x >= cut else 0.0 for x in pr]
        pr = [x / sum(pr) for x in pr]
    if p != 1:
        ranked = sorted(range(len(pr)), key=lambda j: (-pr[j], j))
        keep, acc = set(), 0.0
        for j in ranked:
            if keep and acc >= p:
                break
            keep.add(j)
            acc += pr[j]
        pr = [x if j in keep else 0.0 for j, x in enumerate(pr)]
        pr = [x / sum(pr) for x in pr]
    return pr


@pytest.mark.parametrize("seed", range(6))
def test_random_cases_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(80):
        n = rng.randint(1, 12)
        logits = [round(rng.uniform(-4, 4), 1) for _ in range(n)]   # rounding makes ties likely
        args = (rng.choice([0.0, 0.3, 1.0, 1.7]), rng.choice([0, -1, 1, 2, 3, 20]), rng.choice([1.0, 0.9, 0.5, 0.2]))
        close(sampling_probs(list(logits), *args), reference(logits, *args))
