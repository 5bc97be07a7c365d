"""Tests of exercise 248: which runtime mode a step runs in, and the token count it pads to."""
import bisect
import random

import pytest

from submission import dispatch_cudagraph

SIZES = [1, 2, 4, 8, 16]
MODES = ["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]


def test_example():
    assert dispatch_cudagraph([1, 1, 1], "FULL_AND_PIECEWISE", SIZES, 4) == ("FULL", 4)
    assert dispatch_cudagraph([5, 1], "FULL_AND_PIECEWISE", SIZES, 4) == ("PIECEWISE", 8)
    assert dispatch_cudagraph([5, 1], "FULL_DECODE_ONLY", SIZES, 4) == ("NONE", None)
    assert dispatch_cudagraph([1] * 6, "FULL_AND_PIECEWISE", SIZES, 4) == ("PIECEWISE", 8)
    assert dispatch_cudagraph([1, 1], "PIECEWISE", SIZES, 4) == ("PIECEWISE", 2)
    assert dispatch_cudagraph([9, 9], "PIECEWISE", SIZES, 4) == ("NONE", None)
    with pytest.raises(ValueError):
        dispatch_cudagraph([1], "piecewise", SIZES, 4)


@pytest.mark.parametrize("mode, decode, mixed", [
    ("NONE", ("NONE", None), ("NONE", None)),
    ("PIECEWISE", ("PIECEWISE", 4), ("PIECEWISE", 8)),
    ("FULL", ("FULL", 4), ("FULL", 8)),
    ("FULL_DECODE_ONLY", ("FULL", 4), ("NONE", None)),
    ("FULL_AND_PIECEWISE", ("FULL", 4), ("PIECEWISE", 8)),
])
def test_each_mode_on_a_decode_and_a_mixed_batch(mode, decode, mixed):
    assert dispatch_cudagraph([1, 1, 1], mode, SIZES, 8) == decode
    assert dispatch_cudagraph([3, 1, 1, 1], mode, SIZES, 8) == mixed


def test_a_prefill_alone_is_not_a_decode():
    assert dispatch_cudagraph([2], "FULL_DECODE_ONLY", SIZES, 8) == ("NONE", None)
    assert dispatch_cudagraph([2], "FULL_AND_PIECEWISE", SIZES, 8) == ("PIECEWISE", 2)
    assert dispatch_cudagraph([1, 1, 7], "FULL_AND_PIECEWISE", SIZES, 8) == ("PIECEWISE", 16)


def test_padding_goes_by_the_token_total():
    assert dispatch_cudagraph([3, 3], "PIECEWISE", SIZES, 8) == ("PIECEWISE", 8)   # 6 tokens, 2 requests
    assert dispatch_cudagraph([4, 4], "PIECEWISE", SIZES, 8) == ("PIECEWISE", 8)   # an exact size stays
    assert dispatch_cudagraph([16], "PIECEWISE", SIZES, 8) == ("PIECEWISE", 16)
    assert dispatch_cudagraph([17], "PIECEWISE", SIZES, 8) == ("NONE", None)
    assert dispatch_cudagraph([1] * 5, "FULL", SIZES, 8) == ("FULL", 8)


def test_full_decode_graphs_stop_at_max_num_seqs():
    assert dispatch_cudagraph([1] * 4, "FULL_DECODE_ONLY", SIZES, 4) == ("FULL", 4)
    assert dispatch_cudagraph([1] * 5, "FULL_DECODE_ONLY", SIZES, 4) == ("NONE", None)
    assert dispatch_cudagraph([1] * 3, "FULL_DECODE_ONLY", [1, 8], 4) == ("NONE", None)   # pads to 8 > 4
    assert dispatch_cudagraph([1] * 3, "FULL_AND_PIECEWISE", [1, 8], 4) == ("PIECEWISE", 8)
    assert dispatch_cudagraph([1] * 5, "FULL", SIZES, 4) == ("FULL", 8)       # FULL's other half is FULL too


def test_no_sizes_means_eager():
    for mode in MODES:
        assert dispatch_cudagraph([1], mode, [], 4) == ("NONE", None)


@pytest.mark.parametrize("bad", [[], [0], [1, 0], [2, -1]], ids=["[]", "[0]", "[1,0]", "[2,-1]"])
@pytest.mark.parametrize("mode", ["NONE", "PIECEWISE"])
def test_bad_steps_raise(bad, mode):
    with pytest.raises(ValueError):
        dispatch_cudagraph(bad, mode, SIZES, 4)
    with pytest.raises(ValueError):
        dispatch_cudagraph(bad, mode, [], 4)


@pytest.mark.parametrize("mode", ["PARTIAL", "piecewise", "Full", "", "FULL_DECODE"])
def test_unknown_modes_raise_and_are_named(mode):
    with pytest.raises(ValueError) as info:
        dispatch_cudagraph([1], mode, SIZES, 4)
    assert mode in str(info.value)
    with pytest.raises(ValueError):
        dispatch_cudagraph([9, 9], mode, SIZES, 4)   # checked even when no graph would fit


def test_inputs_are_not_modified():
    tokens, sizes = [1, 3], [1, 2, 4]
    dispatch_cudagraph(tokens, "PIECEWISE", sizes, 4)
    assert tokens == [1, 3] and sizes == [1, 2, 4]


def reference(tokens, mode, sizes, max_num_seqs):
    decode_half, other_half = {"NONE": ("NONE", "NONE"), "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
                               "FULL": ("FULL", "FULL"), "FULL_DECODE_ONLY": ("FULL", "NONE"),
                               "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE")}[mode]
    i = bisect.bisect_left(sizes, sum(tokens))
    if i == len(sizes):
        return "NONE", None
    if decode_half == "FULL" and sizes[i] <= max_num_seqs and set(tokens) == {1}:
        return "FULL", sizes[i]
    return ("NONE", None) if other_half == "NONE" else (other_half, sizes[i])


@pytest.mark.parametrize("seed", range(5))
def test_random_steps(seed):
    rng = random.Random(seed)
    for _ in range(80):
        sizes = sorted(rng.sample(range(1, 80), rng.randint(1, 10)))
        max_num_seqs = rng.randint(1, 40)
        tokens = [1] * rng.randint(1, 50) if rng.random() < 0.5 else [rng.randint(1, 9) for _ in range(rng.randint(1, 8))]
        mode = rng.choice(MODES)
        repro = {"num_scheduled_tokens": tokens, "cudagraph_mode": mode, "capture_sizes": sizes,  # noqa: F841
                 "max_num_seqs": max_num_seqs}
        assert dispatch_cudagraph(tokens, mode, sizes, max_num_seqs) == reference(tokens, mode, sizes, max_num_seqs)
