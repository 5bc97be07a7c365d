"""Tests of exercise 252: all-to-all split sizes and send order of an EP dispatch."""
import random

import pytest

import submission as sub


def test_example():
    got = sub.dispatch_plan([[[3, 0], [1, 2]], [[2, 3]]], [0, 0, 1, 1])
    assert got == {"send": [[2, 2], [0, 2]], "recv": [[2, 0], [2, 2]], "order": [[1, 2, 0, 3], [0, 1]]}


def test_two_choices_on_the_same_rank_are_two_pairs():
    got = sub.dispatch_plan([[[0, 1]], [[0, 1]]], [1, 1])
    assert got["send"] == [[0, 2], [0, 2]] and got["recv"] == [[0, 0], [2, 2]]


def test_rank_without_tokens():
    got = sub.dispatch_plan([[], [[0], [2]], []], [2, 0, 1])
    assert got["send"] == [[0, 0, 0], [0, 1, 1], [0, 0, 0]]
    assert got["recv"] == [[0, 0, 0], [0, 1, 0], [0, 1, 0]]
    assert got["order"] == [[], [1, 0], []]


def test_round_robin_placement():
    got = sub.dispatch_plan([[[0, 1, 2, 3]]] * 2, [0, 1, 0, 1])
    assert got["send"] == [[2, 2], [2, 2]] and got["order"] == [[0, 2, 1, 3]] * 2


@pytest.mark.parametrize("topk_ids, owner", [
    ([[[0, 4]], [[1, 2]]], [0, 0, 1, 1]),       # expert 4 does not exist
    ([[[-1, 0]], [[1, 2]]], [0, 0, 1, 1]),      # nor does expert -1
    ([[[0, 1]], [[1, 2]]], [0, 0, 2, 1]),       # rank 2 does not exist
])
def test_bad_input_raises(topk_ids, owner):
    with pytest.raises(ValueError):
        sub.dispatch_plan(topk_ids, owner)


@pytest.mark.parametrize("seed", range(10))
def test_random_dispatch_delivers_every_pair_once(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 5)
    num_experts = rng.randint(n, 12)
    top_k = rng.randint(1, min(4, num_experts))
    owner = [rng.randrange(n) for _ in range(num_experts)]
    topk_ids = [[rng.sample(range(num_experts), top_k) for _ in range(rng.randint(0, 6))] for _ in range(n)]
    got = sub.dispatch_plan(topk_ids, owner)
    send, recv, order = got["send"], got["recv"], got["order"]
    for r in range(n):
        flat = [e for row in topk_ids[r] for e in row]
        assert sorted(order[r]) == list(range(len(flat)))                       # each pair sent once
        dests = [owner[flat[p]] for p in order[r]]
        assert dests == sorted(dests)                                           # grouped by destination
        for j in range(n):
            same = [p for p in order[r] if owner[flat[p]] == j]
            assert same == sorted(same)                                         # stable within a destination
            assert send[r][j] == len(same)
            assert recv[j][r] == send[r][j]
        assert sum(send[r]) == len(flat)
    arrived = {j: [] for j in range(n)}                                         # what each rank receives
    for r in range(n):
        flat = [e for row in topk_ids[r] for e in row]
        offset = 0
        for j in range(n):
            arrived[j] += [flat[p] for p in order[r][offset:offset + send[r][j]]]
            offset += send[r][j]
    for j in range(n):
        assert all(owner[e] == j for e in arrived[j]) and len(arrived[j]) == sum(recv[j])
