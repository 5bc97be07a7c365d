"""Tests of exercise 241: pad a decode step up to a capture size."""
import copy
import random

import pytest

from mini_platform.model_runner import StepInput
from submission import pad_decode_step


def decode_step(rows):
    """A decode step from (token, position, slot, block table) rows, tables padded with 0 to the widest."""
    width = max((len(r[3]) for r in rows), default=0)
    return StepInput(input_ids=[r[0] for r in rows], positions=[r[1] for r in rows], slot_mapping=[r[2] for r in rows],
                     block_tables=[list(r[3]) + [0] * (width - len(r[3])) for r in rows],
                     seq_lens=[r[1] + 1 for r in rows], query_lens=[1] * len(rows),
                     sample_rows=list(range(len(rows))), max_query_len=1 if rows else 0)


def test_example():
    step = StepInput(input_ids=[11, 12], positions=[4, 1], slot_mapping=[12, 21], block_tables=[[3, 0], [5, 0]],
                     seq_lens=[5, 2], query_lens=[1, 1], sample_rows=[0, 1], max_query_len=1)
    padded = pad_decode_step(step, 4)
    assert isinstance(padded, StepInput)
    assert padded.input_ids == [11, 12, 0, 0]
    assert padded.positions == [4, 1, 0, 0]
    assert padded.slot_mapping == [12, 21, -1, -1]
    assert padded.seq_lens == [5, 2, 0, 0]
    assert padded.query_lens == [1, 1, 1, 1]
    assert padded.block_tables == [[3, 0], [5, 0], [0, 0], [0, 0]]
    assert (padded.sample_rows, padded.max_query_len) == ([0, 1], 1)
    assert step.input_ids == [11, 12]


def test_no_padding_needed():
    step = decode_step([(7, 0, 4, [2]), (8, 3, 9, [9, 4])])
    padded = pad_decode_step(step, 2)
    assert padded == step and padded is not step


def test_padding_tokens_never_write_the_cache():
    padded = pad_decode_step(decode_step([(5, 9, 0, [0, 0, 1])]), 8)
    assert padded.slot_mapping == [0] + [-1] * 7      # slot 0 is real and stays; padding is -1, never 0


def test_each_padding_request_owns_one_token_and_reads_nothing():
    padded = pad_decode_step(decode_step([(1, 2, 3, [0])] * 3), 8)
    assert padded.query_lens == [1] * 8 and len(padded.input_ids) == 8 and len(padded.positions) == 8
    assert padded.seq_lens[3:] == [0] * 5 and padded.seq_lens[:3] == [3, 3, 3]


def test_padding_does_not_sample():
    step = decode_step([(1, 0, 0, [0]), (2, 0, 4, [1]), (3, 0, 8, [2])])
    step.sample_rows = [0, 2]          # a request may be past its last position; only these rows sample
    assert pad_decode_step(step, 4).sample_rows == [0, 2]


def test_block_table_rows_are_zero_as_wide_as_the_widest_and_independent():
    padded = pad_decode_step(decode_step([(1, 9, 37, [3, 4, 9]), (2, 0, 20, [5])]), 5)
    assert padded.block_tables == [[3, 4, 9], [5, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    padded.block_tables[2][0] = 99
    assert padded.block_tables[3] == [0, 0, 0] and padded.block_tables[4] == [0, 0, 0]


def test_an_empty_step_pads_to_a_whole_padding_batch():
    padded = pad_decode_step(decode_step([]), 4)
    assert padded.input_ids == [0] * 4 and padded.slot_mapping == [-1] * 4 and padded.seq_lens == [0] * 4
    assert padded.query_lens == [1] * 4 and padded.block_tables == [[], [], [], []]
    assert padded.sample_rows == [] and padded.max_query_len == 1


def test_the_step_is_not_modified():
    step = decode_step([(1, 5, 5, [1, 2]), (2, 0, 12, [3])])
    before = copy.deepcopy(step)
    pad_decode_step(step, 4)
    assert step == before, "the step given was modified"


@pytest.mark.parametrize("size", [8, 3])
@pytest.mark.parametrize("query_lens", [[1, 2], [3], [1, 1, 0], [2, 0], [0, 2, 1]])
def test_only_decode_steps_are_padded(query_lens, size):
    # as many tokens as requests is not enough ([2, 0]); a step that already has `size` requests is checked too
    n = len(query_lens)
    step = StepInput([0] * sum(query_lens), list(range(sum(query_lens))), [-1] * sum(query_lens), [[0]] * n,
                     [q for q in query_lens], list(query_lens), [], max(query_lens))
    with pytest.raises(ValueError):
        pad_decode_step(step, size)


def test_too_many_requests_raise():
    with pytest.raises(ValueError):
        pad_decode_step(decode_step([(1, 0, 0, [0])] * 5), 4)


@pytest.mark.parametrize("seed", range(5))
def test_random_steps(seed):
    rng = random.Random(seed)
    for _ in range(25):
        b = rng.randint(0, 10)
        rows = [(rng.randrange(3, 250), p := rng.randrange(0, 40), rng.randrange(0, 500),
                 [rng.randrange(0, 60) for _ in range(p // 8 + 1)]) for _ in range(b)]
        step = decode_step(rows)
        size = b + rng.randint(0, 6)
        case = f"seed={seed}, size={size}, step={step}"     # taken before the call: the step as it was given
        padded = pad_decode_step(step, size)
        pad, width = size - b, len(step.block_tables[0]) if b else 0
        assert padded.input_ids == step.input_ids + [0] * pad, case
        assert padded.positions == step.positions + [0] * pad, case
        assert padded.slot_mapping == step.slot_mapping + [-1] * pad, case
        assert padded.seq_lens == step.seq_lens + [0] * pad, case
        assert padded.query_lens == [1] * size, case
        assert padded.block_tables == step.block_tables + [[0] * width] * pad, case
        assert padded.sample_rows == step.sample_rows and padded.max_query_len == 1, case
