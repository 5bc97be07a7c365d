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


@pytest.mark.parametrize("seed, dtype", [(0, torch.bfloat16), (1, torch.float16)])
def test_half_inputs_are_multiplied_in_fp32(seed, dtype):
    # In fp32 and rounded once, every entry is within one unit in the last place of the exact result in x's dtype.
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(10, 48, generator=g).to(dtype)
    weight = (torch.randn(3, 48, 8, generator=g) / 7).to(dtype)
    counts = torch.tensor([4, 0, 5])
    got = sub.grouped_matmul(x, weight, counts, 1)
    assert got.dtype == dtype
    exact = torch.zeros(10, 8, dtype=torch.float64)
    exact[:4] = x[:4].double() @ weight[0].double()
    exact[4:9] = x[4:9].double() @ weight[2].double()
    torch.testing.assert_close(got.double(), exact.to(dtype).double(), rtol=torch.finfo(dtype).eps, atol=1e-6,
                               msg=lambda m: f"seed={seed}, {dtype}, counts [4, 0, 5]: multiplied in fp32?\n{m}")


def test_no_rows():
    for dtype in (torch.float32, torch.bfloat16):
        got = sub.grouped_matmul(torch.zeros(0, 2, dtype=dtype), W.to(dtype), torch.tensor([0, 0, 0]), 1)
        assert got.shape == (0, 2) and got.dtype == dtype, f"got {got.dtype} of shape {tuple(got.shape)}"
    with pytest.raises(ValueError):   # the checks apply with no rows too
        sub.grouped_matmul(torch.zeros(0, 2), W, torch.tensor([1, 0, 0]), 1)


@pytest.mark.parametrize("group_list, group_list_type", [
    ([1, 0, 2], 2), ([1, 1, 3], -1),                         # not a type
    ([1, 2], 0), ([1, 1, 2, 3], 0), ([1, 0, 1, 1], 1),       # not E = 3 entries
    ([2, 1, 3], 0), ([-1, 1, 2], 0),                         # a cumsum that decreases (from start_0 = 0)
    ([1, -1, 2], 1),                                         # a negative count
    ([1, 2, 5], 0), ([2, 2, 1], 1),                          # more than M = 4 rows
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
