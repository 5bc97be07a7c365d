"""Tests of exercise 239: npu_grouped_matmul's M-axis groups."""
import pytest
import torch

import submission as sub

X = torch.tensor([[1., 0.], [0., 1.], [1., 1.], [2., 2.]])
W = torch.stack([torch.eye(2), 10 * torch.eye(2), -torch.eye(2)])
EXPECTED = torch.tensor([[1., 0.], [0., -1.], [-1., -1.], [0., 0.]])


def test_example_cumsum():
    torch.testing.assert_close(sub.grouped_matmul(X, W, torch.tensor([1, 1, 3]), group_list_type=0), EXPECTED)


def test_example_counts():
    torch.testing.assert_close(sub.grouped_matmul(X, W, torch.tensor([1, 0, 2]), group_list_type=1), EXPECTED)


def test_counts_are_not_ends():
    # [1, 2, 1] as counts: rows 0 | 1-2 | 3; as ends: rows 0 | 1 | nothing (would decrease)
    got = sub.grouped_matmul(X, W, torch.tensor([1, 2, 1]), group_list_type=1)
    torch.testing.assert_close(got, torch.tensor([[1., 0.], [0., 10.], [10., 10.], [-2., -2.]]))


def test_first_group_empty():
    got = sub.grouped_matmul(X, W, torch.tensor([0, 2, 4]), group_list_type=0)
    torch.testing.assert_close(got, torch.tensor([[10., 0.], [0., 10.], [-1., -1.], [-2., -2.]]))


def test_bf16_in_bf16_out():
    got = sub.grouped_matmul(X.bfloat16(), W.bfloat16(), torch.tensor([1, 0, 2]), group_list_type=1)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), EXPECTED)


@pytest.mark.parametrize("group_list, group_list_type", [
    ([1, 0, 2], 2), ([1, 2], 0), ([2, 1, 3], 0), ([1, -1, 2], 1), ([1, 2, 5], 0), ([2, 2, 1], 1),
])
def test_bad_input_raises(group_list, group_list_type):
    with pytest.raises(ValueError):
        sub.grouped_matmul(X, W, torch.tensor(group_list), group_list_type)


@pytest.mark.parametrize("seed", range(6))
def test_random_groups_both_encodings(seed):
    g = torch.Generator().manual_seed(seed)
    num_experts, k, n = [(4, 8, 6), (6, 16, 16), (1, 5, 3), (8, 12, 20), (3, 7, 7), (5, 4, 9)][seed]
    counts = torch.randint(0, 5, (num_experts,), generator=g)
    counts[torch.randint(0, num_experts, (1,), generator=g)] = 0            # at least one idle expert
    rows = int(counts.sum()) + int(torch.randint(0, 3, (1,), generator=g))   # maybe rows after the last group
    x = torch.randn(rows, k, generator=g)
    weight = torch.randn(num_experts, k, n, generator=g)
    expected = torch.zeros(rows, n, dtype=torch.float64)
    start = 0
    for e, c in enumerate(counts.tolist()):
        for r in range(start, start + c):
            expected[r] = x[r].double() @ weight[e].double()
        start += c
    for group_list, kind in ((counts, 1), (torch.cumsum(counts, 0), 0)):
        got = sub.grouped_matmul(x, weight, group_list, kind)
        assert got.shape == (rows, n) and got.dtype == torch.float32
        torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)
