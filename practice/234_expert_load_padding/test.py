"""Tests of exercise 234: expert load and padding."""
import math
import random

import pytest

import submission as sub


def test_example():
    got = sub.expert_load([[0, 1], [0, 2], [0, 1], [0, 3]], num_experts=6, block_size=4)
    assert got["tokens_per_expert"] == [4, 2, 1, 1, 0, 0]
    assert got["padded_rows"] == 16 and got["num_m_blocks"] == 4 and got["max_buffer_rows"] == 26
    assert math.isclose(got["padding_overhead"], 1.0) and math.isclose(got["imbalance"], 3.0)


def test_even_load_with_full_blocks_costs_nothing():
    got = sub.expert_load([[0, 1], [1, 0], [0, 1], [1, 0]], num_experts=2, block_size=4)
    assert got["padded_rows"] == 8 and got["padding_overhead"] == 0.0 and got["imbalance"] == 1.0


def test_block_size_one():
    got = sub.expert_load([[2], [2], [0]], num_experts=3, block_size=1)
    assert got["padded_rows"] == 3 and got["num_m_blocks"] == 3 and got["max_buffer_rows"] == 3
    assert math.isclose(got["imbalance"], 2.0)


def test_every_choice_counts_even_a_repeated_expert():
    got = sub.expert_load([[1, 1], [0, 1]], num_experts=2, block_size=2)
    assert got["tokens_per_expert"] == [1, 3], "each (token, choice) pair counts once, repeats included"
    assert got["padded_rows"] == 6 and got["num_m_blocks"] == 3


@pytest.mark.parametrize("args", [([], 4, 4), ([[]], 4, 4), ([[], []], 4, 4), ([[0, 4]], 4, 4), ([[-1]], 4, 4),
                                  ([[0]], 4, 0), ([[0]], 4, -1), ([[0, 1]], 4, -4)])
def test_bad_input_raises(args):
    with pytest.raises(ValueError):
        sub.expert_load(*args)


@pytest.mark.parametrize("seed", range(10))
def test_random_loads(seed):
    rng = random.Random(seed)
    num_experts = rng.choice([4, 8, 16, 60])
    k = rng.randint(1, 4)
    block_size = rng.choice([1, 4, 16, 64])
    popularity = [rng.random() ** 4 for _ in range(num_experts)]
    topk_ids = []
    for _ in range(rng.randint(1, 50)):
        left = list(range(num_experts))
        row = [left.pop(rng.choices(range(len(left)), [popularity[e] for e in left])[0]) for _ in range(k)]
        topk_ids.append(row)
    got = sub.expert_load(topk_ids, num_experts, block_size)
    flat = [e for row in topk_ids for e in row]
    counts = [flat.count(e) for e in range(num_experts)]
    padded = sum(math.ceil(c / block_size) * block_size for c in counts)
    assert got["tokens_per_expert"] == counts
    assert got["padded_rows"] == padded and got["num_m_blocks"] == padded // block_size
    assert math.isclose(got["padding_overhead"], padded / len(flat) - 1, abs_tol=1e-12)
    assert got["max_buffer_rows"] == len(flat) + num_experts * (block_size - 1)
    assert math.isclose(got["imbalance"], max(counts) * num_experts / len(flat))
