"""Tests of exercise 250: the QKV shard plan under GQA (split or replicated KV heads)."""
import random

import pytest

import submission as sub


def test_example_replicated():
    assert sub.qkv_shard_plan(num_heads=8, num_kv_heads=2, head_dim=4, tp_size=4) == [
        {"q_heads": [0, 1], "kv_heads": [0], "kv_replicas": 2, "q_rows": [0, 8], "kv_rows": [0, 4]},
        {"q_heads": [2, 3], "kv_heads": [0], "kv_replicas": 2, "q_rows": [8, 16], "kv_rows": [0, 4]},
        {"q_heads": [4, 5], "kv_heads": [1], "kv_replicas": 2, "q_rows": [16, 24], "kv_rows": [4, 8]},
        {"q_heads": [6, 7], "kv_heads": [1], "kv_replicas": 2, "q_rows": [24, 32], "kv_rows": [4, 8]}]


def test_example_split():
    assert sub.qkv_shard_plan(8, 4, 4, 2)[1] == {"q_heads": [4, 5, 6, 7], "kv_heads": [2, 3], "kv_replicas": 1,
                                                 "q_rows": [16, 32], "kv_rows": [8, 16]}


def test_tp_equal_to_kv_heads_is_one_each_without_replicas():
    plan = sub.qkv_shard_plan(8, 4, 2, 4)
    assert [p["kv_heads"] for p in plan] == [[0], [1], [2], [3]] and {p["kv_replicas"] for p in plan} == {1}


def test_single_kv_head_is_on_every_rank():
    plan = sub.qkv_shard_plan(4, 1, 3, 4)
    assert [p["kv_heads"] for p in plan] == [[0]] * 4 and {p["kv_replicas"] for p in plan} == {4}
    assert [p["kv_rows"] for p in plan] == [[0, 3]] * 4


def test_one_rank_holds_everything():
    assert sub.qkv_shard_plan(6, 2, 5, 1) == [{"q_heads": list(range(6)), "kv_heads": [0, 1], "kv_replicas": 1,
                                               "q_rows": [0, 30], "kv_rows": [0, 10]}]


@pytest.mark.parametrize("args", [
    (0, 1, 4, 1), (4, 0, 4, 1), (4, 2, 0, 2), (4, 2, 4, 0),
    (6, 4, 4, 2),       # 6 query heads over 4 KV heads: not GQA
    (6, 2, 4, 4),       # 6 query heads over 4 ranks
    (12, 6, 4, 4),      # 6 KV heads over 4 ranks (fewer ranks than KV heads)
    (12, 3, 4, 4),      # 4 ranks over 3 KV heads: cannot replicate evenly
])
def test_bad_input_raises(args):
    with pytest.raises(ValueError):
        sub.qkv_shard_plan(*args)


@pytest.mark.parametrize("seed", range(12))
def test_random_plans_keep_attention_local(seed):
    rng = random.Random(seed)
    tp = rng.choice([1, 2, 4, 8])
    kv = rng.choice([k for k in (1, 2, 4, 8, 16) if k % tp == 0 or tp % k == 0])
    group = rng.randint(1, 4)
    heads = kv * group * max(1, tp // kv)
    head_dim = rng.choice([2, 8, 64])
    plan = sub.qkv_shard_plan(heads, kv, head_dim, tp)
    assert len(plan) == tp
    assert sorted(q for p in plan for q in p["q_heads"]) == list(range(heads))     # each query head once
    replicas = max(1, tp // kv)
    for r, p in enumerate(plan):
        assert p["q_heads"] == list(range(r * heads // tp, (r + 1) * heads // tp))
        assert p["kv_replicas"] == replicas
        assert len(p["kv_heads"]) == max(1, kv // tp)
        assert {q // (heads // kv) for q in p["q_heads"]} <= set(p["kv_heads"])     # attention stays local
        assert p["q_rows"] == [p["q_heads"][0] * head_dim, (p["q_heads"][-1] + 1) * head_dim]
        assert p["kv_rows"] == [p["kv_heads"][0] * head_dim, (p["kv_heads"][-1] + 1) * head_dim]
    holders = {}
    for r, p in enumerate(plan):
        for k in p["kv_heads"]:
            holders.setdefault(k, []).append(r)
    assert sorted(holders) == list(range(kv))
    assert all(len(rs) == replicas and rs == list(range(rs[0], rs[0] + replicas)) for rs in holders.values())
