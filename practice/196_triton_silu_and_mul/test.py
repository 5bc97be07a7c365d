"""Tests of exercise 196: the Triton kernel launched directly (masks, strides) and through the wrapper.

Without a GPU the kernel runs in the Triton interpreter; TRITON_INTERPRET must be set before the
submission's @triton.jit runs, hence before the import below.
"""
import os

if not os.path.exists("/dev/nvidia0"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.runtime.interpreter  # noqa: E402,F401

from submission import silu_and_mul, silu_and_mul_kernel  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}  # bf16: interpreter truncates on store


def reference(x):
    g, u = x.double().chunk(2, dim=-1)
    return (g * torch.sigmoid(g) * u).to(x.dtype)


def test_example():
    x = torch.tensor([[0.0, 1.0, 2.0, 3.0]], device=DEVICE)
    silu1 = 1 / (1 + torch.exp(torch.tensor(-1.0, dtype=torch.float64))).item()
    torch.testing.assert_close(silu_and_mul(x).cpu(), torch.tensor([[0.0, 3 * silu1]]))
    out = torch.full((1, 2), float("nan"), device=DEVICE)
    silu_and_mul_kernel[(1, 1)](x, out, x.stride(0), out.stride(0), 2, BLOCK=2)
    torch.testing.assert_close(out.cpu(), torch.tensor([[0.0, 3 * silu1]]))


def test_kernel_is_a_triton_kernel():
    kinds = (triton.runtime.jit.JITFunction, triton.runtime.interpreter.InterpretedFunction)
    assert isinstance(silu_and_mul_kernel, kinds), "decorate the kernel with @triton.jit"


@pytest.mark.parametrize("d,block", [(37, 16), (5, 8), (64, 32)])
def test_kernel_masks_and_strides(d, block):
    """Input rows are slices of a wider tensor; output rows have spare columns that must stay NaN."""
    g = torch.Generator().manual_seed(d)
    wide = torch.randn(3, 2 * d + 7, generator=g).to(DEVICE)
    x = wide[:, 3: 3 + 2 * d]
    out_wide = torch.full((3, d + 5), float("nan"), device=DEVICE)
    silu_and_mul_kernel[(3, triton.cdiv(d, block))](x, out_wide, x.stride(0), out_wide.stride(0), d, BLOCK=block)
    torch.testing.assert_close(out_wide[:, :d].cpu(), reference(x).cpu())
    assert torch.isnan(out_wide[:, d:]).all(), "the kernel wrote past column d: mask the store"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(4, 2 * 48), (2, 3, 2 * 37), (1, 2 * 1030)])
def test_wrapper_random(shape, dtype):
    g = torch.Generator().manual_seed(sum(shape))
    x = (torch.randn(*shape, generator=g) * 3).to(dtype).to(DEVICE)
    repro = (f"g = torch.Generator().manual_seed({sum(shape)}); x = (torch.randn(*{shape}, generator=g) * 3).to({dtype}); "  # noqa: F841
             "out = silu_and_mul(x)")
    x0 = x.clone()
    out = silu_and_mul(x)
    assert torch.equal(x, x0)
    assert out.dtype == dtype and out.shape == (*shape[:-1], shape[-1] // 2)
    tol = TOL[dtype]
    torch.testing.assert_close(out.cpu().float(), reference(x).cpu().float(), rtol=tol, atol=tol)


def test_wrapper_takes_a_slice_of_a_wider_tensor():
    """x only needs a unit last stride: its rows may be farther apart than 2d (a slice of gate_up's buffer)."""
    g = torch.Generator().manual_seed(196)
    d = 12
    wide = torch.randn(2, 3, 2 * d + 5, generator=g).to(DEVICE)
    for x in (wide[0, :, 1: 1 + 2 * d], wide[:, :2, 2: 2 + 2 * d]):   # a 2-D slice; a 3-D one whose rows do not merge into a view
        repro = (f"g = torch.Generator().manual_seed(196); wide = torch.randn(2, 3, {2 * d + 5}, generator=g); "  # noqa: F841
                 f"x = wide{'[0, :, 1:25]' if x.dim() == 2 else '[:, :2, 2:26]'}; out = silu_and_mul(x)")
        out = silu_and_mul(x)
        assert out.shape == (*x.shape[:-1], d)
        torch.testing.assert_close(out.cpu(), reference(x).cpu())


def test_wrapper_takes_a_single_row():
    """[..., 2d] includes a 1-D [2d] input (no leading dims): the result is [d]."""
    x = torch.tensor([0.0, 1.0, -2.0, 2.0, 3.0, 0.5], device=DEVICE)
    out = silu_and_mul(x)
    assert out.shape == (3,), f"got shape {tuple(out.shape)}"
    torch.testing.assert_close(out.cpu(), reference(x).cpu())


def test_fp16_is_computed_in_fp32():
    # exp(-g) for g = -12 is 162755, beyond fp16's max (65504): in fp16 silu(-12) collapses to -0 instead of
    # -7.4e-5 (and tl.exp itself accepts only fp32/fp64), so only an fp32 computation passes.
    x = torch.tensor([[-12.0, 1.0]], dtype=torch.float16, device=DEVICE)
    out = silu_and_mul(x).cpu().float()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, reference(x).cpu().float(), rtol=2e-3, atol=1e-6)


def test_odd_last_dim_is_an_error():
    with pytest.raises(ValueError):
        silu_and_mul(torch.ones(2, 5, device=DEVICE))
