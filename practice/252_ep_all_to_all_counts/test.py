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


def test_many_pairs_keep_their_order_within_a_destination():
    ids = [[(3 * t + k) % 4 for k in range(2)] for t in range(24)]     # 48 pairs, 12 per expert
    order, send = plan(ids, [1, 0, 1, 0], 2)
    flat = [e for row in ids for e in row]
    expected = [p for p in range(48) if flat[p] % 2] + [p for p in range(48) if flat[p] % 2 == 0]
    assert (order, send) == (expected, [24, 24])


@pytest.mark.parametrize("ids, owner, n", [
    ([[0, 4]], [0, 0, 1, 1], 2),       # expert 4 does not exist
    ([[-1, 0]], [0, 0, 1, 1], 2),      # nor does expert -1
    ([[0, 1]], [0, 0, 2, 1], 2),       # rank 2 does not exist (owner of an expert nobody chose)
    ([[0, 1]], [0, -1, 1, 1], 2),      # nor does rank -1
    ([[0, 1]], [0, 0, -1, 1], 2),      # ... also for an expert nobody chose
    ([[0, 2]], [0, 0], 1),             # one rank: expert 2 still does not exist
    ([[0, 1]], [0, 1], 1),             # one rank: rank 1 does not exist
    (torch.zeros(0, 2), [0, 2, 1], 2),    # no tokens: the owners are still checked
])
def test_bad_input_raises(ids, owner, n):
    ids = ids.int() if isinstance(ids, torch.Tensor) else torch.tensor(ids, dtype=torch.int32)
    try:
        result = sub.dispatch_plan(ids, torch.tensor(owner), n)
    except ValueError:
        return
    pytest.fail(f"dispatch_plan({ids.tolist()}, expert_owner={owner}, world_size={n}) returned {result!r}; "
                "expected a ValueError")


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
        case = (f"seed={seed}: dispatch_plan(torch.tensor({ids}).reshape({len(ids)}, {top_k}), "
                f"torch.tensor({owner}), {n}) = (order {order}, send_counts {send})")
        flat = [e for row in ids for e in row]
        assert sorted(order) == list(range(len(flat))), f"not every pair exactly once; {case}"
        dests = [owner[flat[p]] for p in order]
        assert dests == sorted(dests), f"destinations in that order {dests}, not ascending; {case}"
        for j in range(n):
            same = [p for p in order if owner[flat[p]] == j]
            assert same == sorted(same), f"pairs for rank {j} in the order {same}, not their own; {case}"
            assert send[j] == len(same), f"{len(same)} pairs go to rank {j}; {case}"
        offset = 0
        for j in range(n):                                                      # what the all-to-all delivers
            arrived[j] += [flat[p] for p in order[offset:offset + send[j]]]
            offset += send[j]
        sends.append(send)
    for j in range(n):
        recv = [sends[i][j] for i in range(n)]                                  # the counts' own all-to-all
        assert all(owner[e] == j for e in arrived[j]) and len(arrived[j]) == sum(recv)
