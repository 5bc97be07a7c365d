"""Tests of exercise 225: lay one scheduled step out as one token sequence."""
import copy
import random

import pytest

from submission import prepare_inputs


def test_example():
    scheduled = [([7, 8, 9, 10, 11], 4, 1), ([1, 2, 3, 4, 5, 6], 0, 3), ([5, 6, 7, 8, 9], 4, 1)]
    assert prepare_inputs(scheduled) == {"input_ids": [11, 1, 2, 3, 9], "positions": [4, 0, 1, 2, 4],
                                         "logits_indices": [0, 4]}


def test_a_middle_chunk_does_not_sample_and_the_last_chunk_does():
    prompt = list(range(100, 110))
    out = prepare_inputs([(prompt, 3, 4), (prompt, 7, 3)])
    assert out == {"input_ids": [103, 104, 105, 106, 107, 108, 109], "positions": [3, 4, 5, 6, 7, 8, 9],
                   "logits_indices": [6]}


def test_a_whole_prompt_and_decodes_sample_from_their_last_rows():
    out = prepare_inputs([([4, 5, 6], 0, 3), ([8, 9], 1, 1), ([1, 2, 3, 4], 3, 1)])
    assert out == {"input_ids": [4, 5, 6, 9, 4], "positions": [0, 1, 2, 1, 3], "logits_indices": [2, 3, 4]}


def test_empty_step():
    assert prepare_inputs([]) == {"input_ids": [], "positions": [], "logits_indices": []}


@pytest.mark.parametrize("bad", [([1, 2, 3], -1, 2), ([1, 2, 3], 1, 0), ([1, 2, 3], 3, 0), ([1, 2, 3], 2, 2),
                                 ([1, 2, 3], 2, -1)])
def test_requests_outside_their_tokens_raise(bad):
    with pytest.raises(ValueError):
        prepare_inputs([([5, 6], 0, 2), bad])


def test_inputs_are_not_modified():
    scheduled = [([7, 8, 9, 10, 11], 4, 1), ([1, 2, 3, 4, 5, 6], 0, 3)]
    before = copy.deepcopy(scheduled)
    out = prepare_inputs(scheduled)
    out["input_ids"].append(0)
    assert scheduled == before


def reference(scheduled):
    out = {"input_ids": [], "positions": [], "logits_indices": []}
    for ids, start, n in scheduled:
        for p in range(start, start + n):
            out["input_ids"].append(ids[p])
            out["positions"].append(p)
        if start + n == len(ids):
            out["logits_indices"].append(len(out["input_ids"]) - 1)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_steps_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(40):
        scheduled = []
        for _ in range(rng.randint(1, 6)):
            ids = [rng.randrange(1000) for _ in range(rng.randint(1, 40))]
            start = rng.choice([0, len(ids) - 1, rng.randint(0, len(ids) - 1)])
            n = rng.choice([1, len(ids) - start, rng.randint(1, len(ids) - start)])
            scheduled.append((ids, start, n))
        assert prepare_inputs(scheduled) == reference(scheduled)
