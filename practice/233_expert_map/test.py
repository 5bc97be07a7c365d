"""Tests of exercise 233: expert_map_for_rank and expert_owners."""
import random

import pytest
import torch

import submission as sub


def as_list(num_experts, ep_size, ep_rank, placement="linear"):
    got = sub.expert_map_for_rank(num_experts, ep_size, ep_rank, placement)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.int32 and got.shape == (num_experts,)
    return got.tolist()


def test_example_linear():
    assert as_list(8, 3, 0) == [0, 1, 2, -1, -1, -1, -1, -1]
    assert as_list(8, 3, 1) == [-1, -1, -1, 0, 1, 2, -1, -1]
    assert as_list(8, 3, 2) == [-1, -1, -1, -1, -1, -1, 0, 1]


def test_example_round_robin():
    assert as_list(8, 3, 1, "round_robin") == [-1, 0, -1, -1, 1, -1, -1, 2]
    assert as_list(8, 3, 2, "round_robin") == [-1, -1, 0, -1, -1, 1, -1, -1]


def test_one_rank_owns_everything():
    assert as_list(4, 1, 0) == [0, 1, 2, 3]
    assert as_list(4, 1, 0, "round_robin") == [0, 1, 2, 3]


def test_example_owners():
    owners = sub.expert_owners(8, 3)
    assert owners.dtype == torch.int64 and owners.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    assert sub.expert_owners(8, 3, "round_robin").tolist() == [0, 1, 2, 0, 1, 2, 0, 1]


def test_fewer_experts_than_ranks():
    assert as_list(2, 4, 3) == [-1, -1]
    assert as_list(2, 4, 1, "round_robin") == [-1, 0]
    assert sub.expert_owners(2, 4).tolist() == [0, 1]


@pytest.mark.parametrize("args", [(8, 0, 0), (8, 2, 2), (8, 2, -1), (8, 2, 0, "random"), (8, -2, -1),
                                  (4, 1, 1), (4, 1, -1), (4, 1, 0, "random"), (4, 1, 0, "Linear")])   # one rank too
def test_bad_input_raises(args):
    with pytest.raises(ValueError):
        sub.expert_map_for_rank(*args)


@pytest.mark.parametrize("args", [(8, 3, "random"), (8, 1, "roundrobin"), (8, 0), (8, -1)])
def test_owners_bad_input_raises(args):
    with pytest.raises(ValueError):
        sub.expert_owners(*args)


@pytest.mark.parametrize("seed", range(10))
def test_every_expert_has_exactly_one_owner(seed):
    rng = random.Random(seed)
    ep_size = rng.randint(2, 6)
    num_experts = rng.randint(ep_size, 20)
    placement = ["linear", "round_robin"][seed % 2]
    maps = [as_list(num_experts, ep_size, r, placement) for r in range(ep_size)]
    base, rem = divmod(num_experts, ep_size)
    owners = sub.expert_owners(num_experts, ep_size, placement).tolist()
    for r, m in enumerate(maps):
        owned = [g for g in range(num_experts) if m[g] >= 0]
        assert len(owned) == base + (r < rem)
        assert [m[g] for g in owned] == list(range(len(owned)))          # local indices in global order
        assert all(owners[g] == r for g in owned)
        if placement == "linear":
            assert owned == list(range(owned[0], owned[0] + len(owned))) if owned else True
        else:
            assert owned == list(range(r, num_experts, ep_size))
    assert sorted(g for m in maps for g in range(num_experts) if m[g] >= 0) == list(range(num_experts))
