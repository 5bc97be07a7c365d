"""Tests of exercise 241: padding the inputs of a decode batch."""
import random

import pytest

from submission import pad_decode_metadata

KEYS = {"input_ids", "positions", "slot_mapping", "seq_lens", "query_start_loc", "block_tables"}


def test_example():
    out = pad_decode_metadata([(11, 4, [3, 0]), (12, 1, [5])], padded_size=4, block_size=4, max_blocks=2)
    assert set(out) == KEYS, sorted(out)
    assert out["input_ids"] == [11, 12, 0, 0]
    assert out["positions"] == [4, 1, 0, 0]
    assert out["slot_mapping"] == [0, 21, -1, -1]
    assert out["seq_lens"] == [5, 2, 0, 0]
    assert out["query_start_loc"] == [0, 1, 2, 2, 2]
    assert out["block_tables"] == [[3, 0], [5, 0], [0, 0], [0, 0]]


def test_no_padding_needed():
    out = pad_decode_metadata([(7, 0, [2]), (8, 3, [9, 4])], padded_size=2, block_size=2, max_blocks=3)
    assert out["slot_mapping"] == [4, 9]
    assert out["seq_lens"] == [1, 4]
    assert out["query_start_loc"] == [0, 1, 2]
    assert out["block_tables"] == [[2, 0, 0], [9, 4, 0]]


def test_padding_slots_are_minus_one_even_for_token_zero():
    out = pad_decode_metadata([(0, 0, [0])], padded_size=3, block_size=16, max_blocks=1)
    assert out["slot_mapping"] == [0, -1, -1]
    assert out["input_ids"] == [0, 0, 0]


def test_padding_block_rows_are_separate_lists():
    out = pad_decode_metadata([(5, 0, [1])], padded_size=3, block_size=4, max_blocks=2)
    out["block_tables"][1][0] = 99
    assert out["block_tables"][2] == [0, 0], "each padding row must be its own list"


def test_errors():
    with pytest.raises(ValueError):
        pad_decode_metadata([], padded_size=4, block_size=4, max_blocks=2)
    with pytest.raises(ValueError):
        pad_decode_metadata([(1, 0, [1])] * 3, padded_size=2, block_size=4, max_blocks=2)
    with pytest.raises(ValueError):
        pad_decode_metadata([(1, 0, [1, 2, 3])], padded_size=2, block_size=4, max_blocks=2)
    with pytest.raises(ValueError):
        pad_decode_metadata([(1, 8, [1, 2])], padded_size=2, block_size=4, max_blocks=4)


def test_last_slot_of_the_table_is_fine():
    out = pad_decode_metadata([(1, 7, [1, 2])], padded_size=1, block_size=4, max_blocks=2)
    assert out["slot_mapping"] == [11] and out["seq_lens"] == [8]


def reference(requests, padded, bs, width):
    rows = []
    for tok, pos, table in requests:
        rows.append((tok, pos, table[pos // bs] * bs + pos % bs, pos + 1, table + [0] * (width - len(table))))
    rows += [(0, 0, -1, 0, [0] * width)] * (padded - len(requests))
    qsl = [min(i, len(requests)) for i in range(padded + 1)]
    return {"input_ids": [r[0] for r in rows], "positions": [r[1] for r in rows],
            "slot_mapping": [r[2] for r in rows], "seq_lens": [r[3] for r in rows],
            "query_start_loc": qsl, "block_tables": [r[4] for r in rows]}


@pytest.mark.parametrize("seed", range(6))
def test_random_batches(seed):
    rng = random.Random(seed)
    for _ in range(40):
        bs, width = rng.choice([1, 2, 4, 16]), rng.randint(1, 6)
        blocks = list(range(64))
        rng.shuffle(blocks)
        requests = []
        for _ in range(rng.randint(1, 9)):
            pos = rng.randrange(width * bs)
            table = [blocks.pop() for _ in range(pos // bs + 1)]
            requests.append((rng.randrange(1000), pos, table))
        padded = len(requests) + rng.randint(0, 7)
        got = pad_decode_metadata([(t, p, list(b)) for t, p, b in requests], padded, bs, width)
        assert got == reference(requests, padded, bs, width), (requests, padded, bs, width)
