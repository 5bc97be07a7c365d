"""Tests of exercise 252: one rank's send order and send counts of an EP dispatch."""
import random

import pytest
import torch

import submission as sub

OWNER = torch.tensor([0, 0, 1, 1])


def plan(ids, owner, n):
    order, send = sub.dispatch_plan(torch.tensor(ids, dtype=torch.int32).reshape(-1, len(ids[0]) if ids else 1),
                                    torch.tensor(owner), n)
    assert order.dtype == torch.int64 and send.dtype == torch.int64, (order.dtype, send.dtype)
    return order.tolist(), send.tolist()


def test_example():
    assert plan([[3, 0], [1, 2]], OWNER, 2) == ([1, 2, 0, 3], [2, 2])
    assert plan([[2, 3]], OWNER, 2) == ([0, 1], [0, 2])


def test_int64_ids_and_shapes():
    order, send = sub.dispatch_plan(torch.tensor([[3, 0], [1, 2]]), OWNER, 2)
    assert order.shape == (4,) and send.shape == (2,)


def test_two_choices_on_the_same_rank_are_two_pairs():
    assert plan([[0, 1]], [1, 1], 2) == ([0, 1], [0, 2])


def test_no_tokens():
    order, send = sub.dispatch_plan(torch.zeros(0, 2, dtype=torch.int32), torch.tensor([2, 0, 1]), 3)
    assert order.tolist() == [] and send.tolist() == [0, 0, 0] and send.dtype == torch.int64


def test_a_rank_that_owns_no_chosen_expert_still_gets_a_count():
    assert plan([[0], [2]], [2, 0, 1], 4) == ([1, 0], [0, 1, 1, 0])


def test_round_robin_placement():
    assert plan([[0, 1, 2, 3]], [0, 1, 0, 1], 2) == ([0, 2, 1, 3], [2, 2])


@pytest.mark.parametrize("ids, owner", [
    ([[0, 4]], [0, 0, 1, 1]),       # expert 4 does not exist
    ([[-1, 0]], [0, 0, 1, 1]),      # nor does expert -1
    ([[0, 1]], [0, 0, 2, 1]),       # rank 2 does not exist
    ([[0, 1]], [0, -1, 1, 1]),      # nor does rank -1
])
def test_bad_input_raises(ids, owner):
    with pytest.raises(ValueError):
        sub.dispatch_plan(torch.tensor(ids, dtype=torch.int32), torch.tensor(owner), 2)


@pytest.mark.parametrize("seed", range(10))
def test_random_dispatch_delivers_every_pair_once(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 5)
    num_experts = rng.randint(n, 12)
    top_k = rng.randint(1, min(4, num_experts))
    owner = [rng.randrange(n) for _ in range(num_experts)]
    ranks = [[rng.sample(range(num_experts), top_k) for _ in range(rng.randint(0, 6))] for _ in range(n)]
    sends, arrived = [], {j: [] for j in range(n)}
    for ids in ranks:
        topk = torch.tensor(ids, dtype=torch.int32).reshape(len(ids), top_k)
        order, send = (t.tolist() for t in sub.dispatch_plan(topk, torch.tensor(owner), n))
        flat = [e for row in ids for e in row]
        assert sorted(order) == list(range(len(flat)))                          # each pair sent once
        dests = [owner[flat[p]] for p in order]
        assert dests == sorted(dests)                                           # grouped by destination
        for j in range(n):
            same = [p for p in order if owner[flat[p]] == j]
            assert same == sorted(same)                                         # stable within a destination
            assert send[j] == len(same)
        offset = 0
        for j in range(n):                                                      # what the all-to-all delivers
            arrived[j] += [flat[p] for p in order[offset:offset + send[j]]]
            offset += send[j]
        sends.append(send)
    for j in range(n):
        recv = [sends[i][j] for i in range(n)]                                  # the counts' own all-to-all
        assert all(owner[e] == j for e in arrived[j]) and len(arrived[j]) == sum(recv)
