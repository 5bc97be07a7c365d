"""Tests of exercise 257: a rank's paged KV cache under TP, split or replicated KV heads."""
import random

import pytest

import submission as sub


def test_example():
    assert sub.kv_cache_plan(num_layers=32, num_kv_heads=8, head_dim=128, tp_size=16, block_size=16,
                             budget_bytes=10 * 2**30) == {"kv_heads_per_rank": 1, "block_bytes": 262144,
                                                          "num_blocks": 40960, "tokens": 655360, "replication": 2.0}
    assert sub.kv_cache_plan(32, 8, 128, 4, 16, 10 * 2**30)["block_bytes"] == 524288


def test_split_heads_are_not_replicated():
    got = sub.kv_cache_plan(2, 4, 8, 2, 4, 10_000, dtype_bytes=4)
    assert got["kv_heads_per_rank"] == 2 and got["replication"] == 1.0
    assert got["block_bytes"] == 2 * 2 * 4 * 2 * 8 * 4


def test_whole_blocks_only():
    got = sub.kv_cache_plan(1, 1, 1, 1, 2, 11, dtype_bytes=1)     # a block is 2 * 2 = 4 bytes
    assert got["num_blocks"] == 2 and got["tokens"] == 4


def test_exactly_one_block():
    assert sub.kv_cache_plan(1, 1, 1, 1, 2, 4, dtype_bytes=1)["num_blocks"] == 1


GOOD = (2, 4, 8, 1, 4, 10_000, 2)        # num_layers, num_kv_heads, head_dim, tp_size, block_size, budget, dtype_bytes


def with_arg(position, value):
    args = list(GOOD)
    args[position] = value
    return tuple(args)


@pytest.mark.parametrize("args", [
    *(with_arg(i, v) for i in range(7) for v in (0, -1)),   # every argument, zero or negative (tp_size 1 too)
    (2, 4, -8, 2, 4, 10_000, -2),   # two negatives whose product would look like a fine block
    (32, 6, 128, 4, 16, 2**30),     # 6 KV heads over 4 ranks
    (32, 3, 128, 4, 16, 2**30),     # 4 ranks over 3 KV heads
    (32, 8, 128, 2, 16, 1000),      # not even one block
])
def test_bad_input_raises(args):
    try:
        result = sub.kv_cache_plan(*args)
    except ValueError:
        return
    pytest.fail(f"kv_cache_plan{args} returned {result!r}; expected a ValueError")


@pytest.mark.parametrize("seed", range(10))
def test_random_plans(seed):
    rng = random.Random(seed)
    tp = rng.choice([1, 2, 4, 8, 16])
    kv = rng.choice([k for k in (1, 2, 4, 8, 16) if k % tp == 0 or tp % k == 0])
    layers, head_dim, bs, b = rng.randint(1, 40), rng.choice([64, 128]), rng.choice([16, 32]), rng.choice([1, 2, 4])
    heads = kv // tp if tp < kv else 1
    block = 2 * layers * bs * heads * head_dim * b
    budget = block * rng.randint(1, 500) + rng.randint(0, block - 1)
    got = sub.kv_cache_plan(layers, kv, head_dim, tp, bs, budget, b)
    assert got == {"kv_heads_per_rank": heads, "block_bytes": block, "num_blocks": budget // block,
                   "tokens": budget // block * bs, "replication": pytest.approx(max(1.0, tp / kv))}, (
        f"seed={seed}: kv_cache_plan{(layers, kv, head_dim, tp, bs, budget, b)}")
