"""Tests of exercise 194: RMSNorm against torch's functional norm, dtypes, the fused residual add."""
import pytest
import torch
import torch.nn.functional as F

from submission import fused_add_rms_norm, rms_norm


def test_example():
    x = torch.tensor([[3.0, 4.0], [1.0, -1.0]])
    torch.testing.assert_close(rms_norm(x, torch.tensor([1.0, 2.0]), eps=0.0),
                               torch.tensor([[0.8485, 2.2627], [1.0, -2.0]]), atol=1e-4, rtol=0)
    out = rms_norm(torch.full((1, 4), 300.0, dtype=torch.float16), torch.ones(4, dtype=torch.float16), 1e-6)
    assert out.dtype == torch.float16 and torch.equal(out, torch.ones(1, 4, dtype=torch.float16))
    out, res = fused_add_rms_norm(torch.tensor([[1.0, 1.0]]), torch.tensor([[2.0, 3.0]]), torch.ones(2), 0.0)
    torch.testing.assert_close(res, torch.tensor([[3.0, 4.0]]))
    torch.testing.assert_close(out, torch.tensor([[0.8485, 1.1314]]), atol=1e-4, rtol=0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_random_against_torch(seed, dtype):
    g = torch.Generator().manual_seed(seed)
    shape = [(3, 100), (2, 5, 64), (1, 257), (7, 96), (4, 1), (2, 2, 2, 48)][seed]
    x = (torch.randn(*shape, generator=g) * 3).to(dtype)
    w = torch.randn(shape[-1], generator=g).to(dtype)
    eps = [1e-6, 1e-5][seed % 2]
    repro = (f"g = torch.Generator().manual_seed({seed}); x = (torch.randn(*{shape}, generator=g) * 3).to({dtype}); "  # noqa: F841
             f"w = torch.randn({shape[-1]}, generator=g).to({dtype}); out = rms_norm(x, w, {eps})")
    x_before = x.clone()
    out = rms_norm(x, w, eps)
    assert out.dtype == dtype and out.shape == x.shape and torch.equal(x, x_before)
    expected = F.rms_norm(x.double(), (shape[-1],), w.double(), eps).to(dtype)
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(out, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_rounds_once(dtype):
    """Computed in fp32 and rounded once, nearly every element equals the exactly rounded result;
    rounding an intermediate (the normalized x before the weight) makes many differ by one step."""
    g = torch.Generator().manual_seed(194)
    x, w = torch.randn(64, 128, generator=g).to(dtype), (1 + torch.randn(128, generator=g)).to(dtype)
    exact = F.rms_norm(x.double(), (128,), w.double(), 1e-6).to(dtype)
    differ = (rms_norm(x, w, 1e-6) != exact).float().mean().item()
    assert differ < 0.01, f"{differ:.1%} of the elements differ from the exactly rounded result"


def test_eps_inside_the_square_root():
    # rows whose mean square is comparable to eps: where eps goes decides the result
    x = torch.tensor([[1e-3, -2e-3, 3e-3, 0.0], [1e-2, 1e-2, -1e-2, 1e-2], [0.0, 0.0, 0.0, 0.0]])
    w = torch.tensor([1.0, 2.0, 0.5, 1.0])
    out = rms_norm(x, w, 1e-5)
    torch.testing.assert_close(out, F.rms_norm(x.double(), (4,), w.double(), 1e-5).float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fused_add(dtype):
    g = torch.Generator().manual_seed(42)
    x, r = torch.randn(4, 80, generator=g).to(dtype), (torch.randn(4, 80, generator=g) * 10).to(dtype)
    w = torch.randn(80, generator=g).to(dtype)
    x0, r0 = x.clone(), r.clone()
    out, res = fused_add_rms_norm(x, r, w, 1e-6)
    assert torch.equal(x, x0) and torch.equal(r, r0), "inputs must not be modified"
    assert res.dtype == out.dtype == dtype
    assert torch.equal(res, (x.float() + r.float()).to(dtype))
    torch.testing.assert_close(out, rms_norm(res, w, 1e-6), rtol=0, atol=0)


def test_results_have_the_dtype_of_x():
    """Also for an fp64 x, a weight of another dtype, and an fp32 residual next to a bf16 x."""
    g = torch.Generator().manual_seed(1940)
    x, w = torch.randn(3, 16, generator=g, dtype=torch.float64), torch.randn(16, generator=g, dtype=torch.float64)
    out = rms_norm(x, w, 1e-6)
    assert out.dtype == torch.float64, f"fp64 x gave {out.dtype}"
    torch.testing.assert_close(out, F.rms_norm(x, (16,), w, 1e-6), rtol=1e-5, atol=1e-5)
    xb, w32 = x.to(torch.bfloat16), w.float()
    out = rms_norm(xb, w32, 1e-6)
    assert out.dtype == torch.bfloat16, f"bf16 x with an fp32 weight gave {out.dtype}"
    torch.testing.assert_close(out, F.rms_norm(xb.double(), (16,), w, 1e-6).to(torch.bfloat16), rtol=1.6e-2, atol=1.6e-2)
    r32 = (torch.randn(3, 16, generator=g) * 10).to(torch.bfloat16).float()  # fp32, bf16 values: the sum is exact in fp32
    out, res = fused_add_rms_norm(xb, r32, w32, 1e-6)
    assert (out.dtype, res.dtype) == (torch.bfloat16, torch.bfloat16), f"got {out.dtype}, {res.dtype}"
    assert torch.equal(res, (xb.float() + r32).to(torch.bfloat16))


def test_bad_shapes():
    with pytest.raises(ValueError):
        rms_norm(torch.ones(2, 4), torch.ones(3), 1e-6)
    with pytest.raises(ValueError):
        rms_norm(torch.ones(2, 4), torch.ones(1, 4), 1e-6)   # broadcasts, but is not of shape (4,)
    with pytest.raises(ValueError):
        fused_add_rms_norm(torch.ones(2, 4), torch.ones(2, 4), torch.ones(1, 4), 1e-6)
    with pytest.raises(ValueError):
        fused_add_rms_norm(torch.ones(2, 4), torch.ones(1, 4), torch.ones(4), 1e-6)
