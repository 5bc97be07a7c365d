"""Tests of exercise 231: moe_align_block_size (torch tensors in and out, int32)."""
import random

import pytest
import torch

import submission as sub

DOC = [[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]]


def align(topk_ids, block_size, num_experts, expert_map=None, dtype=torch.int32, top_k=None):
    """The submission on tensors built from lists; its results checked for type and shape, returned as lists."""
    ids = torch.tensor(topk_ids, dtype=dtype) if topk_ids else torch.zeros((0, top_k or 2), dtype=dtype)
    emap = None if expert_map is None else torch.tensor(expert_map, dtype=torch.int32)
    sorted_ids, expert_ids, post = sub.moe_align_block_size(ids, block_size, num_experts, emap)
    for t in (sorted_ids, expert_ids, post):
        assert isinstance(t, torch.Tensor) and t.dtype == torch.int32 and t.dim() == 1
    assert post.shape == (1,)
    return sorted_ids.tolist(), expert_ids.tolist(), int(post[0])


def test_example_vllm_docstring():
    sorted_ids, expert_ids, post = align(DOC, block_size=4, num_experts=5)
    assert sorted_ids == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12] + [12] * 11
    assert expert_ids == [1, 2, 3, 4, 0, 0, 0]
    assert post == 16


def test_example_expert_map():
    sorted_ids, expert_ids, post = align(DOC, 4, 5, expert_map=[-1, -1, -1, 0, 1])
    assert expert_ids == [-1, -1, 0, 1, -1, -1, -1]
    assert sorted_ids[:16] == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12] and post == 16


def test_int64_ids():
    assert align(DOC, 4, 5, dtype=torch.int64)[1] == [1, 2, 3, 4, 0, 0, 0]


def test_int64_expert_map_still_gives_int32():
    emap = torch.tensor([-1, -1, -1, 0, 1])
    _, expert_ids, _ = sub.moe_align_block_size(torch.tensor(DOC, dtype=torch.int32), 4, 5, emap)
    assert expert_ids.dtype == torch.int32, f"all three results are int32, got expert_ids {expert_ids.dtype}"
    assert expert_ids.tolist() == [-1, -1, 0, 1, -1, -1, -1]


def test_full_run_needs_no_padding_block():
    # expert 0 gets exactly 4 entries: one block, no sentinel inside its run
    sorted_ids, expert_ids, post = align([[0, 1], [0, 1], [0, 2], [0, 1]], 4, 3)
    assert post == 12
    assert sorted_ids[:12] == [0, 2, 4, 6, 1, 3, 7, 8, 5, 8, 8, 8]
    assert expert_ids[:3] == [0, 1, 2]


def test_block_size_one_and_empty_experts():
    sorted_ids, expert_ids, post = align([[3], [3], [0]], 1, 6)
    assert post == 3 and sorted_ids == [2, 0, 1] and expert_ids == [0, 3, 3]


def test_empty_batch():
    sorted_ids, expert_ids, post = align([], 4, 2)
    assert post == 0 and sorted_ids == [0] * 6 and expert_ids == [0, 0]
    # every block, used or not, goes through the expert_map: expert 0 lives elsewhere here
    sorted_ids, expert_ids, post = align([], 4, 2, expert_map=[-1, 0])
    assert (sorted_ids, expert_ids, post) == ([0] * 6, [-1, -1], 0)


BAD = [(0, None), (-1, None), (-4, None),                              # block_size < 1
       (4, [0, 1, 2]), (4, [0, 1, 2, 3, 4, 5]), (4, [[0, 1, 2, 3, 4]])]  # expert_map not [num_experts=5]


@pytest.mark.parametrize("block_size, expert_map", BAD)
def test_bad_input_raises(block_size, expert_map):
    with pytest.raises(ValueError):
        align([[0, 1]], block_size, 5, expert_map)


@pytest.mark.parametrize("block_size, expert_map", BAD)
def test_bad_input_raises_without_tokens(block_size, expert_map):
    with pytest.raises(ValueError):
        align([], block_size, 5, expert_map)


@pytest.mark.parametrize("seed", range(12))
def test_random_routing(seed):
    rng = random.Random(seed)
    num_experts = rng.choice([2, 3, 8, 16])
    top_k = rng.randint(1, min(num_experts, 4))
    block_size = rng.choice([1, 2, 4, 16])
    weights = [rng.random() ** 3 for _ in range(num_experts)]        # skewed: some experts stay empty
    topk_ids = []
    for _ in range(rng.randint(0, 40)):
        left = list(range(num_experts))
        row = [left.pop(rng.choices(range(len(left)), [weights[e] for e in left])[0]) for _ in range(top_k)]
        topk_ids.append(row)
    expert_map = None
    if seed % 3 == 0:
        owned = sorted(rng.sample(range(num_experts), rng.randint(1, num_experts)))
        expert_map = [owned.index(e) if e in owned else -1 for e in range(num_experts)]
    sorted_ids, expert_ids, post = align(topk_ids, block_size, num_experts, expert_map, top_k=top_k)
    numel = len(topk_ids) * top_k
    flat = [e for row in topk_ids for e in row]
    buffer = numel + num_experts * (block_size - 1)
    assert len(sorted_ids) == buffer and len(expert_ids) == -(-buffer // block_size)
    counts = [flat.count(e) for e in range(num_experts)]
    assert post == sum(-(-c // block_size) * block_size for c in counts) and post % block_size == 0
    assert sorted_ids[post:] == [numel] * (buffer - post)
    position = 0
    expected_blocks = []
    for e in range(num_experts):
        run = sorted_ids[position:position + -(-counts[e] // block_size) * block_size]
        assert run[:counts[e]] == [i for i, x in enumerate(flat) if x == e]
        assert set(run[counts[e]:]) <= {numel}
        expected_blocks += [e] * (len(run) // block_size)
        position += len(run)
    expected_blocks += [0] * (len(expert_ids) - len(expected_blocks))
    if expert_map is not None:
        expected_blocks = [expert_map[e] for e in expected_blocks]
    assert expert_ids == expected_blocks
