"""Tests of exercise 240: which batch sizes get a full decode graph."""
import random

import pytest

from submission import decode_capture_sizes


def test_example_default_schedule():
    assert decode_capture_sizes(max_num_seqs=20, max_num_batched_tokens=2048) == [1, 2, 4, 8, 16]
    assert decode_capture_sizes(max_num_seqs=1000, max_num_batched_tokens=100_000)[-3:] == [496, 504, 512]


def test_example_user_sizes():
    assert decode_capture_sizes(8, 2048, user_sizes=[16, 4, 4, 1]) == [1, 4]
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        decode_capture_sizes(8, 64, user_sizes=[4, 128])


def test_n_itself_is_a_size_when_a_multiple_of_8():
    assert decode_capture_sizes(600, 100_000)[-1] == 512
    assert decode_capture_sizes(300, 100_000)[-1] == 296


def test_default_is_capped_at_512():
    sizes = decode_capture_sizes(1024, 100_000)
    assert sizes[-1] == 512 and len(sizes) == 3 + 64


def test_sizes_stay_at_most_max_num_seqs():
    assert decode_capture_sizes(1, 2048) == [1]
    assert decode_capture_sizes(3, 2048) == [1, 2]
    assert decode_capture_sizes(8, 2048) == [1, 2, 4, 8]
    assert decode_capture_sizes(6, 2048, user_sizes=[16, 2, 4, 8, 6]) == [2, 4, 6]


def test_default_respects_the_token_budget():
    assert decode_capture_sizes(256, 20) == [1, 2, 4, 8, 16]
    assert decode_capture_sizes(64, 4) == [1, 2, 4]
    assert decode_capture_sizes(64, 3) == [1, 2]          # 1, 2 and 4 are filtered by the budget too
    assert decode_capture_sizes(64, 1) == [1]


def test_user_sizes_are_deduplicated_sorted_and_left_alone():
    user = [64, 8, 64, 2]
    assert decode_capture_sizes(100, 1000, user_sizes=user) == [2, 8, 64]
    assert user == [64, 8, 64, 2]


@pytest.mark.parametrize("bad", [[], [4, 0], [2, -8], [2, True], [4.0], [2, 2.5], ["8"]])
def test_bad_user_sizes_raise(bad):
    with pytest.raises(ValueError):
        decode_capture_sizes(8, 100, user_sizes=bad)


def test_a_user_size_above_the_budget_is_an_error_not_dropped():
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        decode_capture_sizes(256, 100, user_sizes=[8, 101])
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        decode_capture_sizes(256, 100, user_sizes=[101, 8])     # the caller's list need not be ascending
    assert decode_capture_sizes(256, 100, user_sizes=[8, 100]) == [8, 100]


@pytest.mark.parametrize("args", [(2, 2048, [4, 8]), (0, 2048, None), (-4, 2048, None), (0, 2048, [1])],
                         ids=["user sizes above it", "default, 0", "default, negative", "user sizes, 0"])
def test_nothing_left_for_max_num_seqs_raises(args):
    max_num_seqs, budget, user = args
    with pytest.raises(ValueError, match="max_num_seqs"):
        decode_capture_sizes(max_num_seqs, budget, user_sizes=user)


@pytest.mark.parametrize("seed", range(6))
def test_random_schedules(seed):
    rng = random.Random(seed)
    for _ in range(40):
        seqs, budget = rng.randint(1, 700), rng.randint(1, 1200)
        n = min(2 * seqs, 512)
        want = [s for s in [1, 2, 4] + [8 * i for i in range(1, n // 8 + 1)] if s <= budget and s <= seqs]
        assert decode_capture_sizes(seqs, budget) == want, f"seed={seed}: decode_capture_sizes({seqs}, {budget})"
        user = [rng.randint(1, 300) for _ in range(rng.randint(1, 12))]
        kept = sorted({s for s in user if s <= seqs})
        if max(user) <= budget and kept:
            assert decode_capture_sizes(seqs, budget, user_sizes=list(user)) == kept, \
                f"seed={seed}: decode_capture_sizes({seqs}, {budget}, user_sizes={user})"
