"""Tests of exercise 258: undo the dispatch order and take the weighted sum per token."""
import random

import pytest
import torch

import submission as sub


def test_example():
    got = sub.ep_combine(torch.tensor([[10.0], [20.0], [30.0], [40.0]]), torch.tensor([1, 2, 0, 3]),
                         torch.tensor([[0.75, 0.25], [0.5, 0.5]]))
    assert got.dtype == torch.float32 and got.tolist() == [[25.0], [30.0]]


def test_identity_order_one_choice():
    got = sub.ep_combine(torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), torch.arange(3),
                         torch.tensor([[1.0], [2.0], [0.5]]))
    assert got.tolist() == [[1.0, 2.0], [6.0, 8.0], [2.5, 3.0]]


def test_inputs_are_not_modified():
    out, order, w = torch.tensor([[1.0], [2.0]]), torch.tensor([1, 0]), torch.tensor([[0.5, 0.25]])
    sub.ep_combine(out, order, w)
    assert out.tolist() == [[1.0], [2.0]] and order.tolist() == [1, 0] and w.tolist() == [[0.5, 0.25]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_no_tokens(dtype):
    got = sub.ep_combine(torch.zeros(0, 3, dtype=dtype), torch.zeros(0, dtype=torch.int64), torch.zeros(0, 2))
    assert (tuple(got.shape), got.dtype) == ((0, 3), dtype)


def test_fp16_in_fp16_out():
    got = sub.ep_combine(torch.tensor([[2.0], [6.0]], dtype=torch.float16), torch.tensor([1, 0]),
                         torch.tensor([[0.5, 0.25]]))
    assert got.dtype == torch.float16 and got.tolist() == [[3.5]], (got.dtype, got.tolist())   # 0.5 * 6 + 0.25 * 2


def test_bf16_in_bf16_out_summed_in_fp32():
    # 256 + 1 + 1 in bf16 stays 256 (a step is 2 there); in fp32 it is 258, which bf16 holds exactly
    out = torch.tensor([[256.0], [1.0], [1.0]], dtype=torch.bfloat16)
    got = sub.ep_combine(out, torch.arange(3), torch.ones(1, 3))
    assert got.dtype == torch.bfloat16 and got.tolist() == [[258.0]]


def test_weights_are_applied_in_fp32():
    # 200 * 0.3 is 60.0 in fp32; with the weight rounded to bf16 (0.30078125) it is 60.16, which bf16 rounds to 60.25
    out = torch.tensor([[200.0], [8.0]], dtype=torch.bfloat16)
    got = sub.ep_combine(out, torch.tensor([0, 1]), torch.tensor([[0.3], [0.5]]))
    assert got.dtype == torch.bfloat16 and got.tolist() == [[60.0], [4.0]]


@pytest.mark.parametrize("rows, order", [
    (4, [0, 1, 2]),          # a pair is missing from order
    (3, [0, 1, 2, 3]),       # a row is missing
    (5, [0, 1, 2, 3, 4]),    # one pair too many
])
def test_bad_shapes_raise(rows, order):
    raises(torch.ones(rows, 2), torch.tensor(order), torch.full((2, 2), 0.5))


def raises(expert_out, order, topk_weights):
    try:
        result = sub.ep_combine(expert_out, order, topk_weights)
    except ValueError:
        return
    pytest.fail(f"ep_combine(expert_out {tuple(expert_out.shape)}, order {tuple(order.shape)}, topk_weights "
                f"{tuple(topk_weights.shape)}) returned {tuple(result.shape)}; expected a ValueError")


@pytest.mark.parametrize("shape", [(4,), (4, 2, 1)])
def test_expert_out_must_be_2d(shape):
    raises(torch.ones(shape), torch.arange(4), torch.full((2, 2), 0.5))


def test_order_must_be_1d():
    raises(torch.ones(4, 2), torch.arange(4).reshape(2, 2), torch.full((2, 2), 0.5))


def test_no_tokens_still_checks_the_shapes():
    raises(torch.ones(2, 3), torch.arange(2), torch.zeros(0, 2))


@pytest.mark.parametrize("seed", range(10))
def test_random_dispatch_and_combine(seed):
    rng = random.Random(seed)
    T, K, H = rng.randint(1, 7), rng.randint(1, 4), rng.randint(1, 5)
    weights = torch.tensor([[rng.randint(1, 16) / 16 for _ in range(K)] for _ in range(T)])
    outputs = torch.tensor([[rng.randint(-64, 64) / 8 for _ in range(H)] for _ in range(T * K)])   # per pair
    order = list(range(T * K))
    rng.shuffle(order)
    got = sub.ep_combine(outputs[order], torch.tensor(order), weights)
    expected = (outputs.reshape(T, K, H) * weights.unsqueeze(-1)).sum(1)
    case = f"seed={seed}: T={T}, K={K}, H={H}, order={order}"
    assert got.shape == (T, H), f"{case}: shape {tuple(got.shape)}"
    torch.testing.assert_close(got, expected, msg=lambda m: f"{case}\n{m}")
