"""Tests of exercise 250: one rank's heads under GQA (KV heads split or replicated)."""
import random

import pytest

import submission as sub


def shard(*args, **kwargs):
    result = sub.head_shard(*args, **kwargs)
    assert isinstance(result, tuple) and len(result) == 5, f"expected a 5-tuple, got {result!r}"
    return tuple(result)


def test_example_replicated():
    assert [shard(8, 2, 4, r) for r in range(4)] == [(2, 1, 0, 0, 2), (2, 1, 2, 0, 2), (2, 1, 4, 1, 2),
                                                     (2, 1, 6, 1, 2)]


def test_example_split():
    assert shard(8, 4, 2, 1) == (4, 2, 4, 2, 1)


def test_keyword_arguments():
    assert shard(total_heads=8, total_kv_heads=2, tp_size=4, tp_rank=3) == (2, 1, 6, 1, 2)


def test_tp_equal_to_kv_heads_is_one_each_without_replicas():
    assert [shard(8, 4, 4, r) for r in range(4)] == [(2, 1, 2 * r, r, 1) for r in range(4)]


def test_single_kv_head_is_on_every_rank():
    assert [shard(4, 1, 4, r) for r in range(4)] == [(1, 1, r, 0, 4) for r in range(4)]


def test_one_rank_holds_everything():
    assert shard(6, 2, 1, 0) == (6, 2, 0, 0, 1)


@pytest.mark.parametrize("args", [
    (4, 2, 0, 0), (4, 2, -2, 0), (4, 2, 2, 2), (4, 2, 2, -1),   # no ranks; a rank outside [0, tp_size)
    (4, 2, 1, 1), (4, 2, 1, -1),                                # ... also when one rank holds everything
    (0, 1, 1, 0), (4, 0, 1, 0), (-2, -1, 1, 0), (8, -2, 2, 0),
    (6, 4, 2, 0), (6, 4, 1, 0),   # 6 query heads over 4 KV heads: not GQA (whatever tp_size)
    (6, 2, 4, 0),       # 6 query heads over 4 ranks
    (12, 6, 4, 0),      # 6 KV heads over 4 ranks (fewer ranks than KV heads)
    (12, 3, 4, 0),      # 4 ranks over 3 KV heads: cannot replicate evenly
])
def test_bad_input_raises(args):
    try:
        result = sub.head_shard(*args)
    except ValueError:
        return
    pytest.fail(f"head_shard{args} returned {result!r}; expected a ValueError")


@pytest.mark.parametrize("seed", range(12))
def test_random_shards_keep_attention_local(seed):
    rng = random.Random(seed)
    tp = rng.choice([1, 2, 4, 8])
    kv = rng.choice([k for k in (1, 2, 4, 8, 16) if k % tp == 0 or tp % k == 0])
    group = rng.randint(1, 4)
    heads = kv * group * max(1, tp // kv)
    plan = [shard(heads, kv, tp, r) for r in range(tp)]
    replicas = max(1, tp // kv)
    case = f"seed={seed}: [head_shard({heads}, {kv}, {tp}, r) for r in range({tp})] = {plan}"
    holders = {}
    for r, (num_heads, num_kv, q_start, kv_start, kv_replicas) in enumerate(plan):
        assert (num_heads, q_start) == (heads // tp, r * heads // tp), f"{case}: rank {r}'s query heads"
        assert (num_kv, kv_replicas) == (max(1, kv // tp), replicas), f"{case}: rank {r}'s KV heads / replicas"
        kv_heads = range(kv_start, kv_start + num_kv)
        needed = {q // (heads // kv) for q in range(q_start, q_start + num_heads)}
        assert needed <= set(kv_heads), f"{case}: rank {r} needs KV heads {sorted(needed)}, holds {list(kv_heads)}"
        for k in kv_heads:
            holders.setdefault(k, []).append(r)
    assert sorted(holders) == list(range(kv)), f"{case}: KV heads held {sorted(holders)}, expected 0..{kv - 1}"
    for k, rs in holders.items():
        assert rs == list(range(rs[0], rs[0] + replicas)), f"{case}: KV head {k} on ranks {rs}, not neighbours"
