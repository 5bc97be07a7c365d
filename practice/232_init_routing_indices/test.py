"""Tests of exercise 232: init_routing v1 (column-major j*N+t) versus v2 (token-major t*K+j)."""
import random

import pytest

import submission as sub

EXAMPLE = [[2, 0], [1, 2], [0, 1]]


def test_example_v1():
    assert sub.init_routing_v1(EXAMPLE) == ([0, 2, 1, 2, 0, 1], [4, 2, 1, 0, 5, 3], [0, 0, 1, 1, 2, 2])


def test_example_v2():
    assert sub.init_routing_v2(EXAMPLE, 3) == ([0, 2, 1, 2, 0, 1], [4, 0, 2, 5, 1, 3], [2, 2, 2])


def test_example_v2_active_range():
    assert sub.init_routing_v2(EXAMPLE, 3, active_expert_range=[1, 3]) == ([1, 2, 0, 1], [2, -1, 0, 3, -1, 1], [2, 2])


def test_v1_torch_npu_documentation_case():
    # torch_npu.npu_moe_init_routing's call example: expert_idx [[1, 2], [0, 1], [0, 2]], run through the doc's numpy reference
    assert sub.init_routing_v1([[1, 2], [0, 1], [0, 2]]) == ([1, 2, 0, 1, 0, 2], [2, 0, 1, 4, 3, 5], [0, 0, 1, 1, 2, 2])


def test_v2_counts_include_idle_experts():
    assert sub.init_routing_v2([[3, 0], [3, 0]], 6)[2] == [2, 0, 0, 2, 0, 0]
    assert sub.init_routing_v2([[3, 0], [3, 0]], 6, [2, 5])[2] == [0, 2, 0]


@pytest.mark.parametrize("call", [
    lambda: sub.init_routing_v1([[0, 1], [2]]),
    lambda: sub.init_routing_v1([[0, -1]]),
    lambda: sub.init_routing_v2([[0, 3]], 3),
    lambda: sub.init_routing_v2([[0, 1], [2]], 3),
    lambda: sub.init_routing_v2([[0, 1]], 3, [2, 2]),
    lambda: sub.init_routing_v2([[0, 1]], 3, [1, 4]),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


def random_routing(seed):
    rng = random.Random(seed)
    num_experts = rng.choice([2, 4, 5, 8])
    k = rng.randint(1, min(4, num_experts))
    topk_ids = [rng.sample(range(num_experts), k) for _ in range(rng.randint(1, 9))]
    return rng, num_experts, k, topk_ids


@pytest.mark.parametrize("seed", range(10))
def test_random_v1(seed):
    _, num_experts, k, topk_ids = random_routing(seed)
    n = len(topk_ids)
    pairs = sorted((topk_ids[t][j], t, j) for t in range(n) for j in range(k))   # by expert, then token
    gather, row_idx, experts = sub.init_routing_v1(topk_ids)
    assert experts == [e for e, _, _ in pairs] and gather == [t for _, t, _ in pairs]
    assert row_idx == [dict(((j * n + t), d) for d, (_, t, j) in enumerate(pairs))[i] for i in range(n * k)]


@pytest.mark.parametrize("seed", range(10))
def test_random_v2_and_its_relation_to_v1(seed):
    rng, num_experts, k, topk_ids = random_routing(seed)
    n = len(topk_ids)
    start = rng.randint(0, num_experts - 1)
    end = rng.randint(start + 1, num_experts)
    pairs = sorted((topk_ids[t][j], t, j) for t in range(n) for j in range(k) if start <= topk_ids[t][j] < end)
    gather, row_idx, counts = sub.init_routing_v2(topk_ids, num_experts, [start, end])
    assert gather == [t for _, t, _ in pairs]
    where = {(t * k + j): d for d, (_, t, j) in enumerate(pairs)}
    assert row_idx == [where.get(i, -1) for i in range(n * k)]
    assert counts == [sum(1 for e, _, _ in pairs if e == x) for x in range(start, end)]
    _, full, _ = sub.init_routing_v2(topk_ids, num_experts)
    _, v1, _ = sub.init_routing_v1(topk_ids)
    assert all(full[t * k + j] == v1[j * n + t] for t in range(n) for j in range(k))
