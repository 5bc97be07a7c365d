"""Tests of exercise 255: a column- then row-parallel gated MLP equals the unsplit one."""
import pytest
import torch
import torch.nn.functional as F

import submission as sub


def unsplit(x, gate, up, down, bias=None):
    x, gate, up, down = (t.double() for t in (x, gate, up, down))
    y = F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), down)
    return y if bias is None else y + bias.double()


def test_example_shards():
    gate, up, down = torch.arange(8.).reshape(4, 2), torch.ones(4, 2), torch.ones(2, 4)
    gate_up, down_shard = sub.shard_gated_mlp(gate, up, down, tp_size=2, tp_rank=1)
    assert torch.equal(gate_up, torch.tensor([[4., 5.], [6., 7.], [1., 1.], [1., 1.]]))
    assert torch.equal(down_shard, torch.ones(2, 2))


def test_example_output():
    gate, up, down = torch.arange(8.).reshape(4, 2), torch.ones(4, 2), torch.ones(2, 4)
    x = torch.tensor([[1., -1.]])
    got = sub.tensor_parallel_mlp(x, gate, up, down, tp_size=2)
    torch.testing.assert_close(got.double(), unsplit(x, gate, up, down), atol=1e-5, rtol=1e-5)


def test_merged_layout_and_down_columns():
    torch.manual_seed(1)
    gate, up, down = torch.randn(6, 3), torch.randn(6, 3), torch.randn(3, 6)
    for r in range(3):
        gate_up, down_shard = sub.shard_gated_mlp(gate, up, down, 3, r)
        assert torch.equal(gate_up, torch.cat([gate[2 * r:2 * r + 2], up[2 * r:2 * r + 2]]))
        assert torch.equal(down_shard, down[:, 2 * r:2 * r + 2])


def test_partials_add_up_to_the_whole():
    torch.manual_seed(2)
    x, gate, up, down = torch.randn(3, 4), torch.randn(8, 4), torch.randn(8, 4), torch.randn(4, 8)
    parts = [sub.rank_partial(x, *sub.shard_gated_mlp(gate, up, down, 4, r)) for r in range(4)]
    assert all(p.shape == (3, 4) and p.dtype == torch.float32 for p in parts)
    torch.testing.assert_close(sum(parts).double(), unsplit(x, gate, up, down), atol=1e-5, rtol=1e-5)


def test_bias_added_once():
    torch.manual_seed(3)
    x, gate, up, down = torch.randn(2, 4), torch.randn(8, 4), torch.randn(8, 4), torch.randn(4, 8)
    bias = torch.randn(4)
    got = sub.tensor_parallel_mlp(x, gate, up, down, 4, down_bias=bias)
    torch.testing.assert_close(got.double(), unsplit(x, gate, up, down, bias), atol=1e-5, rtol=1e-5)


def test_bf16_inputs_are_computed_in_fp32():
    torch.manual_seed(4)
    x, gate, up, down = (torch.randn(*s).bfloat16() for s in ((5, 16), (32, 16), (32, 16), (16, 32)))
    bias = torch.randn(16)                                 # fp32: added as it is
    part = sub.rank_partial(x, *sub.shard_gated_mlp(gate, up, down, 2, 1))
    assert part.dtype == torch.float32, f"rank_partial on bf16 inputs returned {part.dtype}, expected torch.float32"
    got = sub.tensor_parallel_mlp(x, gate, up, down, 2, down_bias=bias)
    assert got.dtype == torch.float32, f"tensor_parallel_mlp on bf16 inputs returned {got.dtype}"
    torch.testing.assert_close(got.double(), unsplit(x, gate, up, down, bias), atol=1e-4, rtol=1e-4)


def test_fp64_inputs_still_give_fp32():
    torch.manual_seed(5)
    x, gate, up, down = (torch.randn(*s, dtype=torch.float64) for s in ((2, 4), (4, 4), (4, 4), (4, 4)))
    part = sub.rank_partial(x, *sub.shard_gated_mlp(gate, up, down, 2, 0))
    assert part.dtype == torch.float32, f"rank_partial on fp64 inputs returned {part.dtype}, expected torch.float32"
    got = sub.tensor_parallel_mlp(x, gate, up, down, 2, down_bias=torch.randn(4, dtype=torch.float64))
    assert got.dtype == torch.float32, f"tensor_parallel_mlp on fp64 inputs and bias returned {got.dtype}"
    got = sub.tensor_parallel_mlp(x.float(), gate.float(), up.float(), down.float(), 2,
                                  down_bias=torch.randn(4, dtype=torch.float64))
    assert got.dtype == torch.float32, f"an fp64 bias on fp32 inputs turned the result into {got.dtype}"


def test_indivisible_intermediate_raises():
    try:
        result = sub.shard_gated_mlp(torch.zeros(6, 2), torch.zeros(6, 2), torch.zeros(2, 6), 4, 0)
    except ValueError:
        return
    pytest.fail(f"shard_gated_mlp with I=6, tp_size=4 returned shapes {[tuple(t.shape) for t in result]}; "
                "expected a ValueError")


@pytest.mark.parametrize("seed", range(6))
def test_random_shapes(seed):
    g = torch.Generator().manual_seed(seed)
    tp = [1, 2, 4, 8][seed % 4]
    H, I, T = 8 * (seed % 3 + 1), tp * (seed + 2), seed + 1
    x, gate, up, down = (torch.randn(*s, generator=g) for s in ((T, H), (I, H), (I, H), (H, I)))
    bias = torch.randn(H, generator=g) if seed % 2 else None
    got = sub.tensor_parallel_mlp(x, gate, up, down, tp, down_bias=bias)
    case = f"seed={seed}: tp_size={tp}, T={T}, H={H}, I={I}, bias={'yes' if bias is not None else 'no'}"
    assert got.shape == (T, H) and got.dtype == torch.float32, f"{case}: got {tuple(got.shape)} {got.dtype}"
    torch.testing.assert_close(got.double(), unsplit(x, gate, up, down, bias), atol=1e-4, rtol=1e-4,
                               msg=lambda m: f"{case}\n{m}")
