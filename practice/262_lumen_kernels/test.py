"""Stage 262: the "lumen" kernel backend, registered by a general plugin, equal to the CPU reference."""
import importlib

import pytest
import torch

import submission
from capstone import harness
from mini_platform import ops, plugins

LUMEN_KERNELS = ("rms_norm", "fused_add_rms_norm", "silu_and_mul", "rotary_embedding", "reshape_and_cache",
                 "paged_decode_attention",
                 "paged_attention")


@pytest.fixture(scope="module")
def lumen():
    harness.activate(harness.install(submission.PROJECT))
    plugins.load_general_plugins()  # what the engine does right after it picks the platform
    return "lumen"


def both(kernel, *args):
    """The kernel's result on the lumen backend and on the CPU reference (same inputs, cloned)."""
    copy = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    return ops.get_kernel(kernel, "lumen")(*args), ops.get_kernel(kernel, "cpu")(*copy)


def close(dtype):
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-2, rtol=1e-2)


def assert_fp32_rounded_once(got, want, what):
    """``got`` is the CPU reference ``want`` up to rounding: fp32 within 1e-5; bf16 and fp16, whose reference is
    fp32 arithmetic rounded once to the dtype, at most one rounding step of that dtype away in every element
    (arithmetic in bf16 itself drifts two steps and more; in fp16 it overflows or loses subnormals)."""
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: got {got.dtype} {tuple(got.shape)}, expected {want.dtype} {tuple(want.shape)}"
    if want.dtype == torch.float32:
        torch.testing.assert_close(got, want, **close(want.dtype), msg=lambda m: f"{what}: {m}")
        return
    info = torch.finfo(want.dtype)
    size = torch.maximum(got.float().abs(), want.float().abs()).clamp(min=info.tiny)
    steps = (got.float() - want.float()).abs() / (2.0 ** torch.floor(torch.log2(size)) * info.eps)
    steps = steps.nan_to_num(float("inf")).flatten()
    worst, off = int(steps.argmax()), int((steps > 1).sum())
    assert off == 0, (
        f"{what}: worst element (flat index {worst}) got {got.flatten()[worst].item()!r}, expected "
        f"{want.flatten()[worst].item()!r}; {off} of {steps.numel()} elements are more than one "
        f"{str(want.dtype).removeprefix('torch.')} rounding step from the reference (fp32 arithmetic, rounded once)")


def test_example_backend_registered_by_the_general_plugin(lumen):
    assert ops.BACKEND_PACKAGES.get("lumen") == "lumen_npu.ops", \
        f"kernel backends after the general plugins ran: {ops.BACKEND_PACKAGES}"
    x, weight = torch.randn(3, 8, generator=torch.Generator().manual_seed(0)), torch.ones(8)
    torch.testing.assert_close(ops.rms_norm(x, weight, 1e-6, backend="lumen"), ops.rms_norm(x, weight, 1e-6, backend="cpu"))


@pytest.mark.parametrize("kernel", LUMEN_KERNELS)
def test_every_kernel_a_dense_model_needs_is_there(lumen, kernel):
    assert callable(ops.get_kernel(kernel, "lumen"))


def test_block_sizes_are_declared_like_the_platform(lumen):
    package = importlib.import_module("lumen_npu.ops")
    assert tuple(getattr(package, "SUPPORTED_BLOCK_SIZES", None) or ()) == (32, 64, 128)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("seed", [1, 2])
def test_rms_norm(lumen, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x, weight = (torch.randn(5, 64, generator=g) * 3).to(dtype), torch.randn(64, generator=g).to(dtype)
    got, want = both("rms_norm", x, weight, 1e-5)
    assert_fp32_rounded_once(got, want, f"rms_norm, x {str(dtype).removeprefix('torch.')} [5, 64] (seed {seed})")


def test_rms_norm_eps_inside_the_root(lumen):
    x, weight = torch.full((2, 4), 1e-3), torch.ones(4)
    got, want = both("rms_norm", x, weight, 1e-2)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_add_rms_norm_returns_the_sum_as_the_new_residual(lumen, dtype):
    g = torch.Generator().manual_seed(3)
    x, residual, weight = (torch.randn(4, 32, generator=g).to(dtype) for _ in range(3))
    (out, res), (want_out, want_res) = both("fused_add_rms_norm", x, residual, weight[0], 1e-6)
    torch.testing.assert_close(res, want_res, atol=0, rtol=0,
                               msg=lambda m: f"the new residual is x + residual in x's dtype, exactly: {m}")
    assert_fp32_rounded_once(out, want_out, f"fused_add_rms_norm's output, {str(dtype).removeprefix('torch.')}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_silu_and_mul(lumen, dtype):
    x = torch.randn(6, 2 * 24, generator=torch.Generator().manual_seed(4)).to(dtype)
    got, want = both("silu_and_mul", x)
    assert_fp32_rounded_once(got, want, f"silu_and_mul, x {str(dtype).removeprefix('torch.')} [6, 48]")


def test_every_kernel_works_on_the_last_dim_of_a_3d_input(lumen):
    g = torch.Generator().manual_seed(8)
    x, residual, weight = torch.randn(2, 3, 64, generator=g), torch.randn(2, 3, 64, generator=g), torch.randn(64, generator=g)
    got, want = both("rms_norm", x, weight, 1e-5)
    assert_fp32_rounded_once(got, want, "rms_norm, x [2, 3, 64] (the mean is over the last dim)")
    (out, res), (want_out, want_res) = both("fused_add_rms_norm", x, residual, weight, 1e-5)
    assert_fp32_rounded_once(out, want_out, "fused_add_rms_norm's output, x [2, 3, 64]")
    got, want = both("silu_and_mul", torch.randn(2, 3, 48, generator=g))
    assert_fp32_rounded_once(got, want, "silu_and_mul, x [2, 3, 48] (gate and up are halves of the last dim)")


def test_rms_norm_returns_xs_dtype_whatever_the_weights(lumen):
    g = torch.Generator().manual_seed(9)
    x, weight = torch.randn(4, 64, generator=g).bfloat16(), torch.randn(64, generator=g)  # fp32 weight
    got, want = both("rms_norm", x, weight, 1e-5)
    assert_fp32_rounded_once(got, want, "rms_norm, x bf16 with an fp32 weight (the result is in x's dtype)")


def test_fp16_inputs_are_computed_in_fp32(lumen):
    g = torch.Generator().manual_seed(10)
    x, residual = ((torch.randn(4, 64, generator=g) * 300).half() for _ in range(2))  # squares overflow fp16
    weight = torch.randn(64, generator=g).half()
    got, want = both("rms_norm", x, weight, 1e-5)
    assert_fp32_rounded_once(got, want, "rms_norm, x fp16 with |x| up to ~1000 (x**2 overflows in fp16)")
    (out, _), (want_out, _) = both("fused_add_rms_norm", x, residual, weight, 1e-5)
    assert_fp32_rounded_once(out, want_out, "fused_add_rms_norm's output, fp16 (x**2 overflows in fp16)")
    gate, up = torch.tensor([[-20.0, -17.0, -14.0, 1.5]]), torch.tensor([[1000.0, 1000.0, 1000.0, 2.0]])
    got, want = both("silu_and_mul", torch.cat([gate, up], dim=-1).half())
    assert_fp32_rounded_once(got, want, f"silu_and_mul, fp16, gate {gate.tolist()}, up {up.tolist()}")


def test_rotary_embedding(lumen):
    g = torch.Generator().manual_seed(5)
    head, cache = 16, torch.randn(64, 16, generator=g)
    positions = torch.randint(0, 64, (7,), generator=g)
    q, k = torch.randn(7, 4 * head, generator=g), torch.randn(7, 2 * head, generator=g)
    (gq, gk), (wq, wk) = both("rotary_embedding", positions, q, k, head, cache, True)
    torch.testing.assert_close(gq, wq)
    torch.testing.assert_close(gk, wk)


def test_cache_write_and_paged_attention(lumen):
    g = torch.Generator().manual_seed(6)
    blocks, block_size, nkv, nh, hd = 6, 32, 2, 4, 16
    k, v = torch.randn(40, nkv, hd, generator=g), torch.randn(40, nkv, hd, generator=g)
    slots = torch.cat([torch.arange(32, 64), torch.arange(96, 104)]).int()
    slots[5] = -1  # padding is skipped
    caches = [torch.zeros(blocks, block_size, nkv, hd) for _ in range(4)]
    ops.reshape_and_cache(k, v, caches[0], caches[1], slots, backend="lumen")
    ops.reshape_and_cache(k, v, caches[2], caches[3], slots, backend="cpu")
    torch.testing.assert_close(caches[0], caches[2])
    torch.testing.assert_close(caches[1], caches[3])
    q = torch.randn(9, nh, hd, generator=g)
    tables = torch.tensor([[1, 3], [1, 3]], dtype=torch.int32)
    qsl, seq_lens = torch.tensor([0, 8, 9], dtype=torch.int32), torch.tensor([40, 33], dtype=torch.int32)
    got, want = both("paged_attention", q, caches[0], caches[1], tables, qsl, seq_lens, hd ** -0.5)
    torch.testing.assert_close(got, want)
