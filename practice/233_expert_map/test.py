"""Tests of exercise 233: determine_expert_map and localize_topk_ids."""
import random

import pytest

import submission as sub


def test_example_linear():
    assert sub.determine_expert_map(3, 0, 8) == (3, [0, 1, 2, -1, -1, -1, -1, -1])
    assert sub.determine_expert_map(3, 1, 8) == (3, [-1, -1, -1, 0, 1, 2, -1, -1])
    assert sub.determine_expert_map(3, 2, 8) == (2, [-1, -1, -1, -1, -1, -1, 0, 1])


def test_example_round_robin():
    assert sub.determine_expert_map(3, 1, 8, "round_robin") == (3, [-1, 0, -1, -1, 1, -1, -1, 2])
    assert sub.determine_expert_map(3, 2, 8, "round_robin") == (2, [-1, -1, 0, -1, -1, 1, -1, -1])


def test_example_no_split_and_localize():
    assert sub.determine_expert_map(1, 0, 8) == (8, None)
    assert sub.localize_topk_ids([[6, 0], [7, 3]], [-1, -1, -1, -1, -1, -1, 0, 1]) == [[0, -1], [1, -1]]


def test_localize_without_map_is_a_copy():
    ids = [[1, 2]]
    got = sub.localize_topk_ids(ids, None)
    assert got == [[1, 2]]
    got[0][0] = 9
    assert ids == [[1, 2]]


def test_fewer_experts_than_ranks():
    assert sub.determine_expert_map(4, 3, 2) == (0, [-1, -1])
    assert sub.determine_expert_map(4, 1, 2, "round_robin") == (1, [-1, 0])


@pytest.mark.parametrize("args", [(0, 0, 8), (2, 2, 8), (2, -1, 8), (2, 0, 8, "random")])
def test_bad_input_raises(args):
    with pytest.raises(ValueError):
        sub.determine_expert_map(*args)


@pytest.mark.parametrize("seed", range(10))
def test_every_choice_is_computed_exactly_once(seed):
    rng = random.Random(seed)
    ep_size = rng.randint(2, 6)
    num_experts = rng.randint(ep_size, 20)
    strategy = ["linear", "round_robin"][seed % 2]
    maps = [sub.determine_expert_map(ep_size, r, num_experts, strategy) for r in range(ep_size)]
    sizes = [n for n, _ in maps]
    assert sorted(sizes, reverse=True) == sizes and sum(sizes) == num_experts and max(sizes) - min(sizes) <= 1
    for g in range(num_experts):
        owners = [r for r, (_, m) in enumerate(maps) if m[g] != -1]
        assert len(owners) == 1
        r = owners[0]
        if strategy == "round_robin":
            assert r == g % ep_size and maps[r][1][g] == g // ep_size
    for n, m in maps:
        assert sorted(v for v in m if v != -1) == list(range(n))
        owned = [g for g in range(num_experts) if m[g] != -1]
        assert [m[g] for g in owned] == list(range(n))                      # local order follows global order
        if strategy == "linear" and owned:
            assert owned == list(range(owned[0], owned[0] + n))
    topk_ids = [rng.sample(range(num_experts), min(2, num_experts)) for _ in range(7)]
    local = [sub.localize_topk_ids(topk_ids, m) for _, m in maps]
    for t, row in enumerate(topk_ids):
        for j, g in enumerate(row):
            hits = [r for r in range(ep_size) if local[r][t][j] != -1]
            assert len(hits) == 1 and local[hits[0]][t][j] == maps[hits[0]][1][g]
