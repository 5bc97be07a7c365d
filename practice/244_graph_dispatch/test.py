"""Tests of exercise 244: which graph a step replays, or None for eager."""
import bisect
import random

import pytest

from submission import dispatch_graph

SIZES = [1, 2, 4, 8, 16]


def test_example():
    assert dispatch_graph([1, 1, 1], SIZES) == 4
    assert dispatch_graph([1] * 8, SIZES) == 8
    assert dispatch_graph([5, 1], SIZES) is None
    assert dispatch_graph([1] * 17, SIZES) is None
    with pytest.raises(ValueError):
        dispatch_graph([], SIZES)


def test_every_decode_batch_pads_to_the_next_size():
    assert [dispatch_graph([1] * n, SIZES) for n in range(1, 18)] == \
        [1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 16, None]


def test_any_request_with_more_than_one_token_runs_eagerly():
    assert dispatch_graph([2], SIZES) is None                  # one prefill token pair fits a graph, still eager
    assert dispatch_graph([1, 1, 3], SIZES) is None            # the prefill is not the first request
    assert dispatch_graph([1, 7, 1, 1], SIZES) is None
    assert dispatch_graph([3], [4, 8]) is None


def test_largest_size_and_beyond():
    assert dispatch_graph([1] * 16, SIZES) == 16 and dispatch_graph([1] * 20, SIZES) is None
    assert dispatch_graph([1] * 3, [5]) == 5 and dispatch_graph([1] * 5, [5]) == 5 and dispatch_graph([1] * 6, [5]) is None


def test_no_graphs_means_eager():
    assert dispatch_graph([1], []) is None


@pytest.mark.parametrize("sizes", [SIZES, []], ids=["sizes=SIZES", "sizes=[]"])
@pytest.mark.parametrize("bad", [[], [0], [1, 0, 1], [1, -2], [3, 0], [0, 5, 1], [1] * 20 + [0]],
                         ids=["[]", "[0]", "[1,0,1]", "[1,-2]", "[3,0]", "[0,5,1]", "[1]*20+[0]"])
def test_bad_steps_raise(bad, sizes):
    # checked first: neither a prefill next to it, an empty size list nor a step larger than every graph skips it
    with pytest.raises(ValueError):
        dispatch_graph(bad, sizes)


def test_inputs_are_not_modified():
    tokens, sizes = [1, 1, 1], [1, 2, 4]
    dispatch_graph(tokens, sizes)
    assert tokens == [1, 1, 1] and sizes == [1, 2, 4]


@pytest.mark.parametrize("seed", range(6))
def test_random_steps(seed):
    rng = random.Random(seed)
    for _ in range(60):
        sizes = sorted(rng.sample(range(1, 200), rng.randint(1, 12)))
        batch = rng.randint(1, 220)
        decode = [1] * batch
        i = bisect.bisect_left(sizes, batch)
        assert dispatch_graph(decode, sizes) == (sizes[i] if i < len(sizes) else None), f"seed={seed}: dispatch_graph([1] * {batch}, {sizes})"
        mixed = list(decode)
        mixed[rng.randrange(batch)] = rng.randint(2, 9)
        assert dispatch_graph(mixed, sizes) is None, f"seed={seed}: dispatch_graph({mixed}, {sizes})"
