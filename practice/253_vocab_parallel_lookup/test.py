"""Tests of exercise 253: vocabulary-parallel embedding with padding and masking."""
import random

import pytest

import submission as sub


def test_example_ranges():
    assert sub.vocab_range(5, 2, 0, padding=4) == (0, 4, 4)
    assert sub.vocab_range(5, 2, 1, padding=4) == (4, 4, 1)


def test_example_local_lookup():
    assert sub.local_lookup([1, 4, 0], [[1.0, 1.0], [2.0, 2.0]], start=3) == [[0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]


def test_example_parallel_embedding():
    table = [[0.5, 1.0], [1.5, 2.0], [2.5, 3.0], [3.5, 4.0], [4.5, 5.0]]
    assert sub.parallel_embedding([4, 0, 4], table, tp_size=2, padding=4) == [[4.5, 5.0], [0.5, 1.0], [4.5, 5.0]]


def test_default_padding_is_64():
    assert sub.vocab_range(100, 2, 1) == (64, 64, 36)


def test_one_rank_is_not_padded():
    assert sub.vocab_range(100, 1, 0) == (0, 100, 100)


def test_a_multiple_of_the_padding_is_not_padded_further():
    assert [sub.vocab_range(128, 2, r) for r in range(2)] == [(0, 64, 64), (64, 64, 64)]


def test_ranks_past_the_vocabulary_hold_only_padding():
    assert sub.vocab_range(5, 4, 1) == (16, 16, 0)
    assert sub.vocab_range(5, 4, 3) == (48, 16, 0)


def test_local_lookup_returns_copies():
    shard = [[1.0, 2.0]]
    out = sub.local_lookup([7], shard, start=7)
    out[0][0] = 9.0
    assert shard == [[1.0, 2.0]]


def test_last_id_of_a_range_belongs_to_one_rank():
    table = [[float(i)] for i in range(8)]
    assert sub.parallel_embedding([3, 4, 7], table, tp_size=2, padding=4) == [[3.0], [4.0], [7.0]]


def raises(function, *args):
    try:
        result = getattr(sub, function)(*args)
    except ValueError:
        return
    pytest.fail(f"{function}{args} returned {result!r}; expected a ValueError")


@pytest.mark.parametrize("args", [(10, 0, 0), (10, -2, 0), (10, 2, 2), (10, 2, -1), (10, 3, 0, 8),
                                  (10, 1, 1), (10, 1, -1)])    # one rank: its rank must still be 0
def test_bad_ranges_raise(args):
    raises("vocab_range", *args)


@pytest.mark.parametrize("ids, tp_size", [([5], 2), ([-1], 2), ([0, 9], 2), ([-1], 1), ([0, 5], 1)])
def test_ids_outside_the_vocabulary_raise(ids, tp_size):
    raises("parallel_embedding", ids, [[1.0, 2.0]] * 5, tp_size, 4)


@pytest.mark.parametrize("seed", range(10))
def test_random_lookups_equal_the_whole_table(seed):
    rng = random.Random(seed)
    tp = rng.choice([1, 2, 4])
    padding = rng.choice([4, 8, 64])
    vocab = rng.randint(1, 40)
    dim = rng.randint(1, 4)
    table = [[rng.randint(-9, 9) / 4 for _ in range(dim)] for _ in range(vocab)]
    ids = [rng.randrange(vocab) for _ in range(rng.randint(1, 12))]
    case = f"seed={seed}: vocab_size={vocab}, tp_size={tp}, padding={padding}, dim={dim}, ids={ids}"
    assert sub.parallel_embedding(ids, table, tp, padding) == [table[i] for i in ids], case
    ranges = [sub.vocab_range(vocab, tp, r, padding) for r in range(tp)]
    case += f", vocab_range for each rank: {ranges}"
    if tp > 1:
        rows = ranges[0][1]
        assert rows * tp % padding == 0 and rows * tp >= vocab and rows * tp - padding < vocab, case
    assert [s for s, _, _ in ranges] == [r * ranges[0][1] for r in range(tp)], case
    assert sum(real for _, _, real in ranges) == vocab, case
    for start, rows, real in ranges:
        assert 0 <= real <= rows, case
        shard = table[start:start + real] + [[0.0] * dim] * (rows - real)
        got = sub.local_lookup(ids, shard, start)
        assert got == [table[i] if start <= i < start + real else [0.0] * dim for i in ids], (
            f"{case}: local_lookup(ids, shard of rank with start={start})")
