"""Tests of exercise 222: stop conditions."""
import random

import pytest

from submission import check_stop


def test_example_eos():
    assert check_stop([5, 9, 2], prompt_len=3, max_tokens=10, stop_token_ids=[], eos_token_ids=[2],
                      ignore_eos=False, max_model_len=100) == "stop"


def test_example_ignore_eos():
    assert check_stop([5, 9, 2], 3, 10, [], [2], True, 100) is None


def test_example_context_length():
    assert check_stop([4, 4, 4], 3, 10, [], [2], False, 6) == "length"


def test_example_stop_token_with_ignore_eos_wins_over_max_tokens():
    assert check_stop([7, 8], 3, 2, [8], [2], True, 100) == "stop"


def test_no_condition_means_none():
    assert check_stop([5], 3, 10, [8], [2], False, 100) is None
    assert check_stop([5, 6, 7], 3, 4, [8], [2], False, 7) is None     # one below each limit


def test_stop_wins_over_length_on_the_same_token():
    assert check_stop([1, 2], 1, 2, [], [2], False, 100) == "stop"      # EOS on the last allowed token
    assert check_stop([1, 2], 1, 2, [], [2], True, 100) == "length"
    assert check_stop([1, 2], 98, 10, [2], [], True, 100) == "stop"     # stop token at the context limit


def test_max_tokens_is_reached_at_equality():
    assert check_stop([5, 6, 7], 1, 3, [], [2], False, 100) == "length"
    assert check_stop([5, 6], 1, 3, [], [2], False, 100) is None


def test_context_length_counts_the_prompt_and_is_reached_at_equality():
    assert check_stop([5, 6], 8, 100, [], [2], False, 10) == "length"
    assert check_stop([5, 6], 7, 100, [], [2], False, 10) is None
    assert check_stop([5, 6], 1, 100, [], [2], False, 2) == "length"


def test_ignore_eos_keeps_the_stop_tokens():
    assert check_stop([1, 8], 1, 10, [8], [2], True, 100) == "stop"
    assert check_stop([1, 2], 1, 10, [8], [2], True, 100) is None


def test_only_the_last_token_counts():
    assert check_stop([8, 2, 5], 1, 10, [8], [2], False, 100) is None


def test_tuples_and_several_eos_ids():
    assert check_stop((4, 3), 1, 10, (), (2, 3), False, 100) == "stop"
    assert check_stop((4, 9), 1, 10, (9, 11), (2, 3), True, 100) == "stop"


def test_the_output_is_left_as_it_is():
    output = [5, 9, 2]
    assert check_stop(output, 3, 3, [], [2], False, 100) == "stop"
    assert output == [5, 9, 2]


def reference(output, prompt_len, max_tokens, stops, eos, ignore_eos, max_len):
    last = output[-1]
    if last in stops or (last in eos and not ignore_eos):
        return "stop"
    if len(output) == max_tokens or prompt_len + len(output) >= max_len:
        return "length"
    return None


@pytest.mark.parametrize("seed", range(6))
def test_random_cases_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(200):
        max_tokens = rng.randint(1, 12)
        output = [rng.randrange(12) for _ in range(rng.randint(1, max_tokens))]
        args = (rng.randint(1, 10), max_tokens, rng.sample(range(12), rng.randint(0, 2)),
                tuple(rng.sample(range(12), rng.randint(0, 2))), rng.random() < 0.3, rng.randint(5, 30))
        assert check_stop(list(output), *args) == reference(output, *args), (output, args)
