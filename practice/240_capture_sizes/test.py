"""Tests of exercise 240: the capture-size schedule and the padded-size lookup."""
import random

import pytest

from submission import capture_sizes, padded_size

SIZES = [1, 2, 4, 8, 16, 24, 32, 40]


def test_example_default_schedule():
    assert capture_sizes(max_num_seqs=20, max_num_batched_tokens=2048) == SIZES
    assert capture_sizes(max_num_seqs=256, max_num_batched_tokens=8192)[-3:] == [496, 504, 512]


def test_example_user_sizes():
    assert capture_sizes(8, 2048, user_sizes=[16, 4, 4, 1]) == [1, 4, 16]


def test_example_padded_size():
    assert (padded_size(3, SIZES), padded_size(8, SIZES), padded_size(17, SIZES), padded_size(41, SIZES)) == \
        (4, 8, 24, None)


def test_largest_default_size_is_included_when_a_multiple_of_8():
    assert capture_sizes(4, 1000) == [1, 2, 4, 8]
    assert capture_sizes(12, 1000)[-1] == 24


def test_default_is_capped_at_512():
    sizes = capture_sizes(1024, 100_000)
    assert sizes[-1] == 512 and len(sizes) == 3 + 64


def test_1_2_4_stay_even_when_n_is_smaller():
    assert capture_sizes(1, 1000) == [1, 2, 4]
    assert capture_sizes(2, 1000) == [1, 2, 4]
    assert capture_sizes(1, 2) == [1, 2]


def test_default_respects_the_token_budget():
    assert capture_sizes(256, 20) == [1, 2, 4, 8, 16]


def test_user_sizes_ignore_n_but_respect_the_budget():
    assert capture_sizes(2, 100, user_sizes=[64, 200, 8]) == [8, 64]


def test_user_sizes_errors():
    with pytest.raises(ValueError):
        capture_sizes(8, 100, user_sizes=[4, 0])
    with pytest.raises(ValueError):
        capture_sizes(8, 100, user_sizes=[128, 256])


def test_padded_size_boundaries():
    assert [padded_size(n, SIZES) for n in (1, 2, 4, 5, 9, 40)] == [1, 2, 4, 8, 16, 40]
    assert padded_size(1000, SIZES) is None
    with pytest.raises(ValueError):
        padded_size(0, SIZES)


def test_padded_size_with_one_size():
    assert padded_size(1, [7]) == 7 and padded_size(7, [7]) == 7 and padded_size(8, [7]) is None


@pytest.mark.parametrize("seed", range(6))
def test_random_schedules_and_lookups(seed):
    rng = random.Random(seed)
    for _ in range(40):
        seqs, budget = rng.randint(1, 400), rng.randint(1, 1200)
        n = min(2 * seqs, 512)
        want = [s for s in [1, 2, 4] + [8 * i for i in range(1, n // 8 + 1)] if s <= budget]
        got = capture_sizes(seqs, budget)
        assert got == want, (seqs, budget)
        user = [rng.randint(1, 300) for _ in range(rng.randint(1, 12))]
        fitting = sorted({s for s in user if s <= budget})
        if fitting:
            assert capture_sizes(seqs, budget, user_sizes=list(user)) == fitting
        for num in range(1, (got[-1] + 3)):
            bigger = [s for s in got if s >= num]
            assert padded_size(num, got) == (bigger[0] if bigger else None), (num, got)
