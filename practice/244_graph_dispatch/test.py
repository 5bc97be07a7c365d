"""Tests of exercise 244: which graph a step may replay."""
import bisect
import random

import pytest

from submission import dispatch

SIZES = [1, 2, 4, 8, 16]
MODES = ["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]


def test_example_decode_and_mixed():
    assert dispatch([1, 1, 1], SIZES, "FULL_AND_PIECEWISE", max_num_seqs=8) == ("FULL", 4)
    assert dispatch([5, 1], SIZES, "FULL_AND_PIECEWISE", max_num_seqs=8) == ("PIECEWISE", 8)
    assert dispatch([5, 1], SIZES, "FULL_DECODE_ONLY", max_num_seqs=8) == ("NONE", 6)
    assert dispatch([5, 1], SIZES, "FULL", max_num_seqs=8) == ("FULL", 8)


def test_example_decode_graph_limit_and_none():
    assert dispatch([1] * 5, SIZES, "FULL_AND_PIECEWISE", max_num_seqs=6) == ("PIECEWISE", 8)
    assert dispatch([1] * 3, SIZES, "NONE", max_num_seqs=8) == ("NONE", 3)


def test_decode_in_each_mode():
    got = {m: dispatch([1, 1, 1, 1, 1], SIZES, m, max_num_seqs=16) for m in MODES}
    assert got == {"NONE": ("NONE", 5), "PIECEWISE": ("PIECEWISE", 8), "FULL": ("FULL", 8),
                   "FULL_DECODE_ONLY": ("FULL", 8), "FULL_AND_PIECEWISE": ("FULL", 8)}


def test_decode_only_mode_has_no_graph_above_max_num_seqs():
    assert dispatch([1] * 5, SIZES, "FULL_DECODE_ONLY", max_num_seqs=6) == ("NONE", 5)
    assert dispatch([1] * 4, SIZES, "FULL_DECODE_ONLY", max_num_seqs=6) == ("FULL", 4)


def test_exact_size_is_not_padded_further():
    assert dispatch([1] * 8, SIZES, "FULL_DECODE_ONLY", max_num_seqs=8) == ("FULL", 8)
    assert dispatch([2, 2], SIZES, "PIECEWISE", max_num_seqs=8) == ("PIECEWISE", 4)


def test_too_many_tokens_run_eagerly_unpadded():
    for mode in MODES:
        assert dispatch([1] * 17, SIZES, mode, max_num_seqs=64) == ("NONE", 17)
    assert dispatch([10, 9], SIZES, "FULL", max_num_seqs=64) == ("NONE", 19)


def test_tokens_not_requests_are_padded():
    assert dispatch([3], SIZES, "PIECEWISE", max_num_seqs=8) == ("PIECEWISE", 4)
    assert dispatch([7, 2], SIZES, "FULL_AND_PIECEWISE", max_num_seqs=8) == ("PIECEWISE", 16)


def test_errors():
    for bad in (([], "FULL"), ([1, 0], "FULL"), ([1], "full"), ([1], "FULL_DECODE")):
        with pytest.raises(ValueError):
            dispatch(bad[0], SIZES, bad[1], max_num_seqs=8)


def reference(tokens, sizes, mode, max_num_seqs):
    n = sum(tokens)
    i = bisect.bisect_left(sizes, n)
    if i == len(sizes):
        return ("NONE", n)
    p = sizes[i]
    if set(tokens) == {1} and mode in ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE") and p <= max_num_seqs:
        return ("FULL", p)
    if mode == "FULL":
        return ("FULL", p)
    if mode in ("PIECEWISE", "FULL_AND_PIECEWISE"):
        return ("PIECEWISE", p)
    return ("NONE", n)


@pytest.mark.parametrize("seed", range(6))
def test_random_steps(seed):
    rng = random.Random(seed)
    for _ in range(80):
        seqs = rng.randint(1, 40)
        sizes = sorted(set(rng.sample(range(1, 90), rng.randint(1, 10))))
        if rng.random() < 0.5:
            tokens = [1] * rng.randint(1, seqs)
        else:
            tokens = [rng.choice([1, 1, rng.randint(1, 30)]) for _ in range(rng.randint(1, seqs))]
        mode = rng.choice(MODES)
        assert dispatch(list(tokens), sizes, mode, seqs) == reference(tokens, sizes, mode, seqs), \
            (tokens, sizes, mode, seqs)
