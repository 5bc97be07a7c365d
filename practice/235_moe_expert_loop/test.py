"""Tests of exercise 235: the expert-loop fused_experts."""
import pytest
import torch
import torch.nn.functional as F

import submission as sub


def example():
    w13 = torch.tensor([[[1., 0.], [0., 1.]], [[0., 1.], [1., 0.]]])
    w2 = torch.tensor([[[1.], [0.]], [[0.], [2.]]])
    return torch.tensor([[1., 2.]]), w13, w2


def test_example():
    hidden, w13, w2 = example()
    out = sub.fused_experts(hidden, w13, w2, torch.tensor([[0.75, 0.25]]), torch.tensor([[1, 0]]))
    expected = 0.25 * torch.tensor([F.silu(torch.tensor(1.)) * 2, 0.]) + 0.75 * torch.tensor([0., 2 * F.silu(torch.tensor(2.))])
    torch.testing.assert_close(out, expected[None], atol=1e-6, rtol=1e-6)


def per_token_reference(hidden, w13, w2, weights, ids, expert_map=None):
    """Token by token, choice by choice, in float64."""
    inter = w13.shape[1] // 2
    out = torch.zeros(hidden.shape, dtype=torch.float64)
    for t in range(hidden.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j]) if expert_map is None else int(expert_map[int(ids[t, j])])
            if e < 0:
                continue
            h = w13[e].double() @ hidden[t].double()
            out[t] += float(weights[t, j]) * (w2[e].double() @ (F.silu(h[:inter]) * h[inter:]))
    return out


def random_layer(seed, num_experts=6, tokens=9, hidden=16, inter=8, top_k=2, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g).to(dtype)
    w13 = (torch.randn(num_experts, 2 * inter, hidden, generator=g) / hidden ** 0.5).to(dtype)
    w2 = (torch.randn(num_experts, hidden, inter, generator=g) / inter ** 0.5).to(dtype)
    logits = torch.randn(tokens, num_experts, generator=g)
    logits[:, -1] = -1e9                                        # the last expert never gets a token
    weights, ids = torch.topk(torch.softmax(logits, -1), top_k)
    return x, w13, w2, weights, ids.to(torch.int32)


@pytest.mark.parametrize("seed", range(4))
def test_random_layers(seed):
    x, w13, w2, weights, ids = random_layer(seed, num_experts=[4, 6, 8, 3][seed], top_k=[1, 2, 3, 2][seed])
    got = sub.fused_experts(x, w13, w2, weights, ids)
    assert got.dtype == torch.float32 and got.shape == x.shape
    torch.testing.assert_close(got.double(), per_token_reference(x, w13, w2, weights, ids), atol=1e-5, rtol=1e-5)


def test_bf16_in_bf16_out():
    x, w13, w2, weights, ids = random_layer(7, dtype=torch.bfloat16)
    got = sub.fused_experts(x, w13, w2, weights, ids)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.double(), per_token_reference(x, w13, w2, weights, ids), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("seed, dtype", [(10, torch.bfloat16), (11, torch.float16)])
def test_half_inputs_are_computed_in_fp32(seed, dtype):
    # Computed in fp32 and rounded once at the end, every entry is within one unit in the last place of the exact
    # result rounded to the input dtype; bf16 / fp16 arithmetic (or a bf16 accumulator) is many units off.
    x, w13, w2, weights, ids = random_layer(seed, num_experts=5, tokens=5, hidden=32, inter=16, top_k=4, dtype=dtype)
    got = sub.fused_experts(x, w13, w2, weights, ids)
    assert got.dtype == dtype, f"returns hidden's dtype {dtype}, got {got.dtype}"
    want = per_token_reference(x, w13, w2, weights, ids).to(dtype)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got.double(), want.double(), rtol=eps, atol=1e-6,
                               msg=lambda m: f"random_layer(seed={seed}, num_experts=5, tokens=5, hidden=32, inter=16, "
                                             f"top_k=4, dtype={dtype}): not computed in fp32?\n{m}")


def test_fp64_in_fp64_out():
    x, w13, w2, weights, ids = random_layer(5, tokens=4, dtype=torch.float64)
    got = sub.fused_experts(x, w13, w2, weights, ids)
    assert got.dtype == torch.float64, f"returns hidden's dtype (fp64), got {got.dtype}"
    torch.testing.assert_close(got, per_token_reference(x, w13, w2, weights, ids), atol=1e-5, rtol=1e-5)


def test_top_k_equal_to_the_number_of_experts_and_a_repeated_expert():
    x, w13, w2, weights, ids = random_layer(6, num_experts=4, tokens=4, top_k=4)
    torch.testing.assert_close(sub.fused_experts(x, w13, w2, weights, ids).double(),
                               per_token_reference(x, w13, w2, weights, ids), atol=1e-5, rtol=1e-5)
    # a token that lists expert 1 twice gets both weighted outputs
    ids = torch.tensor([[1, 1], [0, 1]], dtype=torch.int32)
    weights = torch.tensor([[0.5, 0.25], [0.5, 0.5]])
    got = sub.fused_experts(x[:2], w13, w2, weights, ids)
    torch.testing.assert_close(got.double(), per_token_reference(x[:2], w13, w2, weights, ids), atol=1e-5, rtol=1e-5,
                               msg=lambda m: f"topk_ids={ids.tolist()}, topk_weights={weights.tolist()}\n{m}")


def test_no_tokens():
    _, w13, w2, _, _ = random_layer(0)
    out = sub.fused_experts(torch.zeros(0, 16), w13, w2, torch.zeros(0, 2), torch.zeros(0, 2, dtype=torch.int32))
    assert out.shape == (0, 16)
    out = sub.fused_experts(torch.zeros(0, 16, dtype=torch.bfloat16), w13.bfloat16(), w2.bfloat16(), torch.zeros(0, 2),
                            torch.zeros(0, 2, dtype=torch.int32))
    assert out.shape == (0, 16) and out.dtype == torch.bfloat16, f"got {out.dtype} of shape {tuple(out.shape)}"
    with pytest.raises(ValueError):   # the shapes are checked with no token too
        sub.fused_experts(torch.zeros(0, 16), w13, w2[:, :, :4], torch.zeros(0, 2), torch.zeros(0, 2, dtype=torch.int32))


def test_expert_map_in_any_order():
    # Round-robin-like ownership with local indices not in global order: global 4 -> 0, 1 -> 1, 3 -> 2.
    x, w13, w2, weights, ids = random_layer(8, num_experts=6, tokens=5, top_k=3)
    owned = [4, 1, 3]
    expert_map = torch.tensor([-1, 1, -1, 2, 0, -1], dtype=torch.int32)
    got = sub.fused_experts(x, w13[owned], w2[owned], weights, ids, expert_map)
    want = per_token_reference(x, w13[owned], w2[owned], weights, ids, expert_map)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5,
                               msg=lambda m: f"expert_map={expert_map.tolist()}, topk_ids={ids.tolist()}\n{m}")


def test_expert_map_shares_add_up_to_the_layer():
    x, w13, w2, weights, ids = random_layer(3, num_experts=7, top_k=3)
    whole = sub.fused_experts(x, w13, w2, weights, ids)
    total = torch.zeros_like(whole)
    for owned in ([0, 1, 2], [3, 4], [5, 6]):
        expert_map = torch.full((7,), -1, dtype=torch.int32)
        expert_map[owned] = torch.arange(len(owned), dtype=torch.int32)
        part = sub.fused_experts(x, w13[owned], w2[owned], weights, ids, expert_map)
        torch.testing.assert_close(part.double(), per_token_reference(x, w13[owned], w2[owned], weights, ids, expert_map),
                                   atol=1e-5, rtol=1e-5)
        total += part
    torch.testing.assert_close(total, whole, atol=1e-5, rtol=1e-5)


def test_bad_input_raises():
    x, w13, w2, weights, ids = random_layer(0)
    with pytest.raises(ValueError):
        sub.fused_experts(x, w13, w2, weights, torch.full_like(ids, 6))
    with pytest.raises(ValueError):
        sub.fused_experts(x, w13, w2, weights, torch.full_like(ids, -1))
    with pytest.raises(ValueError):
        sub.fused_experts(x, w13[:, :15], w2, weights, ids)
    with pytest.raises(ValueError):
        sub.fused_experts(x, w13, w2[:, :, :4], weights, ids)
    with pytest.raises(ValueError):   # hidden is 17 wide, the experts' H is 16
        sub.fused_experts(torch.zeros(9, 17), w13, w2, weights, ids)
    with pytest.raises(ValueError):
        sub.fused_experts(x, w13[:2], w2[:2], weights, ids, torch.tensor([0, 1, -1], dtype=torch.int32))
    with pytest.raises(ValueError):   # -1 is not a global expert id, with an expert_map either
        sub.fused_experts(x, w13[:2], w2[:2], weights, torch.full_like(ids, -1), torch.tensor([0, 1, -1, -1, -1, -1], dtype=torch.int32))
