"""Tests of exercise 211: slot mapping and step metadata from block tables."""
import random

import pytest

import submission as sub


def test_example():
    got = sub.build_step_metadata([([7, 2], 3, 2), ([5], 0, 1)], block_size=4)
    assert got == {"slot_mapping": [31, 8, 20], "query_start_loc": [0, 2, 3], "seq_lens": [5, 1],
                   "block_tables": [[7, 2], [5, 0]], "max_query_len": 2}


def test_a_prefill_in_one_block():
    got = sub.build_step_metadata([([1], 0, 3)], block_size=16)
    assert got["slot_mapping"] == [16, 17, 18] and got["max_query_len"] == 3


def test_exactly_full_table():
    got = sub.build_step_metadata([([3, 9], 6, 2)], block_size=4)   # 8 tokens in 2 blocks
    assert got["slot_mapping"] == [38, 39] and got["seq_lens"] == [8]


def test_empty_batch():
    got = sub.build_step_metadata([], block_size=4)
    assert got == {"slot_mapping": [], "query_start_loc": [0], "seq_lens": [], "block_tables": [],
                   "max_query_len": 0}


def test_inputs_are_not_modified():
    requests = [([7, 2], 3, 2), ([5], 0, 1)]
    sub.build_step_metadata(requests, block_size=4)
    assert requests == [([7, 2], 3, 2), ([5], 0, 1)]


@pytest.mark.parametrize("requests", [
    [([1], 3, 2)],                  # 5 tokens do not fit in one block of 4
    [([1], 0, 0)],                  # num_new must be >= 1
    [([1], -1, 2)],
    [([1], 0, -1)],                 # a negative num_new too
    [([1, 2], 8, 1)],               # a decode step past the end of its block table
])
def test_bad_input_raises(requests):
    with pytest.raises(ValueError):
        sub.build_step_metadata([([4], 0, 1)] + requests, block_size=4)


@pytest.mark.parametrize("seed", range(8))
def test_random_steps_address_each_token_once(seed):
    rng = random.Random(seed)
    block_size = rng.choice([1, 2, 4, 16])
    free = list(range(64))
    rng.shuffle(free)
    requests, where = [], {}
    for r in range(rng.randint(1, 5)):
        total = rng.randint(1, 3 * block_size + 1)
        new = rng.randint(1, total)
        nblocks = -(-total // block_size) + rng.randint(0, 1)
        table = [free.pop() for _ in range(nblocks)]
        requests.append((table, total - new, new))
        for p in range(total - new, total):
            where[(r, p)] = (table[p // block_size], p % block_size)
    tokens = sum(n for _, _, n in requests)
    repro = {"requests": requests, "block_size": block_size}  # noqa: F841 - shown on failure
    got = sub.build_step_metadata(requests, block_size)
    expected = [b * block_size + o for (_, _), (b, o) in sorted(where.items())]
    assert len(got["slot_mapping"]) == tokens and got["slot_mapping"] == expected
    assert len(set(expected)) == len(expected)                      # distinct slots
    qsl = got["query_start_loc"]
    assert qsl[0] == 0 and [qsl[i + 1] - qsl[i] for i in range(len(requests))] == [n for _, _, n in requests]
    assert got["seq_lens"] == [c + n for _, c, n in requests]
    width = max(len(t) for t, _, _ in requests)
    assert all(len(row) == width and row[:len(t)] == t and set(row[len(t):]) <= {0}
               for row, (t, _, _) in zip(got["block_tables"], requests))
    assert got["max_query_len"] == max(n for _, _, n in requests)
