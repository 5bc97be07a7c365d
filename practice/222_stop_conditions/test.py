"""Tests of exercise 222: stop conditions."""
import itertools
import random

import pytest

from submission import generate_until_stop


def test_example_eos():
    assert generate_until_stop([5, 9, 2, 7], 3, 10, [], [2], False, 100) == ([5, 9, 2], "stop")


def test_example_ignore_eos_and_stream_end():
    assert generate_until_stop([5, 9, 2, 7], 3, 10, [], [2], True, 100) == ([5, 9, 2, 7], None)


def test_example_context_length():
    assert generate_until_stop(itertools.repeat(4), 3, 10, [], [2], False, 6) == ([4, 4, 4], "length")


def test_stop_tokens_work_even_with_ignore_eos():
    assert generate_until_stop([1, 8, 2], 1, 10, [8], [2], True, 100) == ([1, 8], "stop")


def test_stop_wins_over_length_on_the_same_token():
    assert generate_until_stop([1, 2], 1, 2, [], [2], False, 100) == ([1, 2], "stop")
    assert generate_until_stop([1, 2], 1, 2, [], [2], True, 100) == ([1, 2], "length")


def test_max_tokens_on_an_endless_stream_takes_no_extra_token():
    taken = []

    def stream():
        for i in itertools.count(10):
            taken.append(i)
            yield i
    assert generate_until_stop(stream(), 1, 4, [], [2], False, 100) == ([10, 11, 12, 13], "length")
    assert taken == [10, 11, 12, 13]


def counting(tokens, taken):
    for t in tokens:
        taken.append(t)
        yield t


@pytest.mark.parametrize("args, want", [
    ((1, 10, [8], [2], False, 100), ([1, 8], "stop")),      # stop token
    ((1, 10, [], [2], False, 100), ([1, 8, 2], "stop")),     # EOS
    ((4, 10, [], [2], True, 6), ([1, 8], "length")),         # context length
])
def test_no_token_is_taken_after_the_finish(args, want):
    taken = []
    assert generate_until_stop(counting([1, 8, 2, 5, 6, 7], taken), *args) == want
    assert taken == want[0]


def reference(stream, prompt_len, max_tokens, stops, eos, ignore_eos, max_len):
    out = []
    for t in stream:
        out.append(t)
        if t in stops or (t in eos and not ignore_eos):
            return out, "stop"
        if len(out) == max_tokens or prompt_len + len(out) >= max_len:
            return out, "length"
    return out, None


@pytest.mark.parametrize("seed", range(6))
def test_random_streams_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(100):
        stream = [rng.randrange(12) for _ in range(rng.randint(0, 20))]
        args = (rng.randint(1, 10), rng.randint(1, 25), rng.sample(range(12), rng.randint(0, 2)),
                rng.sample(range(12), rng.randint(0, 2)), rng.random() < 0.3, rng.randint(5, 30))
        assert generate_until_stop(iter(stream), *args) == reference(stream, *args), (stream, args)
