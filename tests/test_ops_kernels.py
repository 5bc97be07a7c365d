"""The rms_norm, fused_add_rms_norm, rotary_embedding and silu_and_mul kernels across backends.

The CPU backend is the specification; it is first checked against independent formulas, then the
triton backend (in the Triton interpreter on a CPU host) and the npu backend (against the torch_npu
emulation: verified against an emulation of torch_npu semantics; not run on Ascend hardware here)
are checked against it on the same random inputs. The ``npu``-marked variant runs the same checks
against the real torch_npu on an Ascend machine.
"""
from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.nn.functional as F

from mini_platform import ops

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# bf16: the Triton interpreter truncates fp32 -> bf16 instead of rounding, so allow one bf16 ulp.
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2)}
EPS = 1e-6
# With a real torch_npu installed the emulation refuses to load; the npu_real variants run instead.
REAL_TORCH_NPU = importlib.util.find_spec("torch_npu") is not None


def rand(*shape, dtype=torch.float32, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(dtype)


def rope_cache(max_pos: int, rot_dim: int, base: float = 10000.0) -> torch.Tensor:
    """vLLM's layout: ``[max_pos, rot_dim]``, cos of every frequency then sin of every frequency."""
    inv_freq = 1.0 / base ** (torch.arange(0, rot_dim, 2, dtype=torch.float64) / rot_dim)
    angles = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cat((angles.cos(), angles.sin()), dim=-1).float()


# One table for every cross-backend rotary case: the real _npu_rotary_embedding keeps the first
# table it sees for the whole process, so all cases must share it (rot_dim 16 everywhere).
COS_SIN = rope_cache(64, 16)


# -- the CPU specification against independent formulas -------------------------------------------

@pytest.mark.parametrize("scale", [1.0, 1e-3], ids=["unit", "eps-sized"])
@pytest.mark.parametrize("shape", [(3, 100), (2, 3, 64), (0, 8)])
def test_cpu_rms_norm_matches_torch(shape, scale):
    """Against float64 as the independent check. ``eps-sized``: mean(x**2) is about eps, so eps added in the wrong
    place shows."""
    x, w = rand(*shape, seed=1, scale=scale), rand(shape[-1], seed=2)
    expected = F.rms_norm(x.double(), (shape[-1],), w.double(), EPS).float()
    got = ops.rms_norm(x, w, EPS, backend="cpu")
    assert got.shape == x.shape and got.dtype == x.dtype
    torch.testing.assert_close(got, expected)


def test_cpu_rms_norm_computes_in_fp32_and_returns_input_dtype():
    # 300 in fp16 squares to 90000 > fp16 max (65504): only an fp32 computation stays finite.
    x = torch.full((2, 8), 300.0, dtype=torch.float16)
    out = ops.rms_norm(x, torch.ones(8, dtype=torch.float16), EPS, backend="cpu")
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, torch.ones_like(out))


@pytest.mark.parametrize("shape", [(4, 48), (2, 3, 40)])
def test_cpu_fused_add_rms_norm_returns_sum_as_residual(shape):
    x, r, w = rand(*shape, seed=3), rand(*shape, seed=4), rand(shape[-1], seed=5)
    before = x.clone(), r.clone()
    out, residual = ops.fused_add_rms_norm(x, r, w, EPS, backend="cpu")
    assert torch.equal(x, before[0]) and torch.equal(r, before[1])  # new tensors; the inputs are left alone
    torch.testing.assert_close(residual, x + r)
    s = (x + r).double()
    torch.testing.assert_close(out, (s / s.pow(2).mean(-1, keepdim=True).add(EPS).sqrt() * w.double()).float())


def test_cpu_silu_and_mul_matches_formula():
    x = rand(3, 2, 2 * 37, seed=6)
    gate, up = x[..., :37], x[..., 37:]
    torch.testing.assert_close(ops.silu_and_mul(x, backend="cpu"), gate * torch.sigmoid(gate) * up)
    with pytest.raises(ValueError, match="even last dimension"):
        ops.silu_and_mul(rand(2, 5), backend="cpu")


def rope_by_complex(x, positions, head_size, rot_dim, is_neox, base=10000.0):
    """Independent RoPE: rotate each pair as a complex number by ``pos * theta_i``."""
    T = x.shape[0]
    heads = x.double().view(T, -1, head_size)
    inv_freq = 1.0 / base ** (torch.arange(0, rot_dim, 2, dtype=torch.float64) / rot_dim)
    rotation = torch.polar(torch.ones(T, rot_dim // 2, dtype=torch.float64),
                           positions.double()[:, None] * inv_freq)[:, None, :]
    rot = heads[..., :rot_dim]
    if is_neox:
        z = torch.complex(rot[..., : rot_dim // 2], rot[..., rot_dim // 2:]) * rotation
        rotated = torch.cat((z.real, z.imag), dim=-1)
    else:
        z = torch.complex(rot[..., 0::2], rot[..., 1::2]) * rotation
        rotated = torch.stack((z.real, z.imag), dim=-1).flatten(-2)
    return torch.cat((rotated, heads[..., rot_dim:]), dim=-1).view(T, -1).float()


@pytest.mark.parametrize("head_size,rot_dim", [(16, 16), (24, 8)])
@pytest.mark.parametrize("is_neox", [True, False])
def test_cpu_rotary_matches_complex_rotation(head_size, rot_dim, is_neox):
    T = 5
    positions = torch.tensor([0, 3, 17, 63, 1])
    q, k = rand(T, 3 * head_size, seed=7), rand(T, head_size, seed=8)
    q_out, k_out = ops.rotary_embedding(positions, q, k, head_size, rope_cache(64, rot_dim), is_neox, backend="cpu")
    torch.testing.assert_close(q_out, rope_by_complex(q, positions, head_size, rot_dim, is_neox))
    torch.testing.assert_close(k_out, rope_by_complex(k, positions, head_size, rot_dim, is_neox))


def test_cpu_rotary_rejects_bad_shapes():
    with pytest.raises(ValueError, match="head_size"):
        ops.rotary_embedding(torch.zeros(2, dtype=torch.long), rand(2, 30), rand(2, 16), 16, COS_SIN, True,
                             backend="cpu")
    with pytest.raises(ValueError, match="rot_dim"):
        ops.rotary_embedding(torch.zeros(2, dtype=torch.long), rand(2, 16), rand(2, 16), 8, COS_SIN, True,
                             backend="cpu")


# -- every other backend against the CPU specification ---------------------------------------------

@pytest.fixture(params=["triton", "npu_emulated", pytest.param("npu_real", marks=pytest.mark.npu)])
def backend_on(request):
    """``(backend, device)`` of a backend to check against the CPU specification."""
    if request.param == "npu_real":
        pytest.importorskip("torch_npu")
        return "npu", "npu"
    if request.param == "npu_emulated":
        if REAL_TORCH_NPU:
            pytest.skip("a real torch_npu is installed: the npu_real variant runs instead")
        request.getfixturevalue("emulated_npu")
        return "npu", "cpu"
    return "triton", "cpu"   # the Triton interpreter; tests/test_cuda.py runs these kernels on a GPU


def run(backend_on, kernel, *args):
    """Call ``kernel`` on ``backend_on``'s device; results come back to the CPU, inputs must stay unchanged."""
    backend, device = backend_on
    moved = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    before = [a.clone() for a in moved if isinstance(a, torch.Tensor)]
    out = kernel(*moved, backend=backend)
    after = [a for a in moved if isinstance(a, torch.Tensor)]
    assert all(torch.equal(b, a) for b, a in zip(before, after)), f"{backend} modified its inputs"
    return tuple(o.cpu() for o in out) if isinstance(out, tuple) else out.cpu()


def assert_agrees(actual, expected, dtype):
    assert actual.dtype == expected.dtype == dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.float(), expected.float(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 100), (2, 3, 64), (1, 257)])
def test_rms_norm_agrees(backend_on, dtype, shape):
    x, w = rand(*shape, dtype=dtype, seed=10), rand(shape[-1], dtype=dtype, seed=11)
    assert_agrees(run(backend_on, ops.rms_norm, x, w, EPS), ops.rms_norm(x, w, EPS, backend="cpu"), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 100), (2, 3, 64)])
def test_fused_add_rms_norm_agrees(backend_on, dtype, shape):
    x, r = rand(*shape, dtype=dtype, seed=12), rand(*shape, dtype=dtype, seed=13, scale=4.0)
    w = rand(shape[-1], dtype=dtype, seed=14)
    out, residual = run(backend_on, ops.fused_add_rms_norm, x, r, w, EPS)
    ref_out, ref_residual = ops.fused_add_rms_norm(x, r, w, EPS, backend="cpu")
    assert_agrees(out, ref_out, dtype)
    assert_agrees(residual, ref_residual, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(4, 2 * 48), (2, 3, 2 * 37), (1, 2 * 1030)])
def test_silu_and_mul_agrees(backend_on, dtype, shape):
    x = rand(*shape, dtype=dtype, seed=15, scale=2.0)
    assert_agrees(run(backend_on, ops.silu_and_mul, x), ops.silu_and_mul(x, backend="cpu"), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("num_heads,num_kv_heads,head_size,is_neox", [
    (4, 2, 16, True), (4, 2, 16, False),   # full rotary
    (3, 1, 24, True), (5, 5, 40, False),   # partial rotary (rot_dim 16), odd head counts
])
def test_rotary_embedding_agrees(backend_on, dtype, num_heads, num_kv_heads, head_size, is_neox):
    if backend_on == ("npu", "npu") and dtype == torch.float32:
        pytest.skip("the ATB rope op on Ascend takes fp16/bf16 query and key only")
    T = 7
    positions = torch.randint(0, COS_SIN.shape[0], (T,), generator=torch.Generator().manual_seed(16))
    q = rand(T, num_heads * head_size, dtype=dtype, seed=17)
    k = rand(T, num_kv_heads * head_size, dtype=dtype, seed=18)
    args = (positions, q, k, head_size, COS_SIN, is_neox)
    q_out, k_out = run(backend_on, ops.rotary_embedding, *args)
    q_ref, k_ref = ops.rotary_embedding(*args, backend="cpu")
    assert_agrees(q_out, q_ref, dtype)
    assert_agrees(k_out, k_ref, dtype)


def test_partial_rotary_of_one_token_and_one_head_leaves_its_inputs_alone(backend_on):
    """T = 1 and a single kv head: the rotary slice of such a key is "contiguous" as it stands, so a
    backend that takes ``.contiguous()`` for a copy rotates the caller's tensor in place (``run`` checks)."""
    q, k = rand(1, 2 * 24, seed=23), rand(1, 24, seed=24)
    q_out, k_out = run(backend_on, ops.rotary_embedding, torch.tensor([5]), q, k, 24, COS_SIN, True)
    q_ref, k_ref = ops.rotary_embedding(torch.tensor([5]), q, k, 24, COS_SIN, True, backend="cpu")
    assert_agrees(q_out, q_ref, torch.float32)
    assert_agrees(k_out, k_ref, torch.float32)


@pytest.mark.parametrize("backend", ["cpu", "triton", "npu"])
def test_every_backend_rejects_bad_shapes_with_the_same_clear_error(backend, request):
    if backend == "npu":
        if REAL_TORCH_NPU:
            pytest.skip("a real torch_npu is installed: the emulation refuses to shadow it")
        request.getfixturevalue("emulated_npu")
    q, k = rand(4, 32), rand(4, 16)
    # positions must give one entry per row: a shorter one would be read past its end on a GPU
    for positions, key in ((torch.arange(2), k), (torch.arange(4)[None], k), (torch.arange(4), k[:3])):
        with pytest.raises(ValueError, match="positions must be \\[num_tokens\\]"):
            ops.rotary_embedding(positions, q, key, 16, COS_SIN, True, backend=backend)
    with pytest.raises(ValueError, match="weight must have shape \\(16,\\)"):
        ops.rms_norm(k, torch.ones(8), EPS, backend=backend)
    with pytest.raises(ValueError, match="residual shape \\(1, 16\\) must equal x shape \\(4, 16\\)"):
        ops.fused_add_rms_norm(k, k[:1], torch.ones(16), EPS, backend=backend)  # would broadcast silently
    with pytest.raises(ValueError, match="even last dimension"):
        ops.silu_and_mul(rand(2, 5), backend=backend)


@pytest.mark.parametrize("backend", ["cpu", "triton", "npu"])
@pytest.mark.parametrize("rot_dim", [16, 8])
def test_every_backend_accepts_zero_tokens(backend, rot_dim, request):
    if backend == "npu":
        if REAL_TORCH_NPU:
            pytest.skip("a real torch_npu is installed: the emulation refuses to shadow it")
        request.getfixturevalue("emulated_npu")
    empty = torch.zeros(0, dtype=torch.long)
    q, k = ops.rotary_embedding(empty, rand(0, 32), rand(0, 16), 16, rope_cache(4, rot_dim), False, backend=backend)
    assert q.shape == (0, 32) and k.shape == (0, 16)
    assert ops.rms_norm(rand(0, 16), torch.ones(16), EPS, backend=backend).shape == (0, 16)
    assert ops.silu_and_mul(rand(0, 16), backend=backend).shape == (0, 8)


def test_triton_rotary_masks_non_power_of_two_sizes_and_strided_input():
    """rot_dim/2 = 6 and 3 heads need masked tiles; query is a strided slice of a fused qkv."""
    head_size, T = 20, 4
    qkv = rand(T, 5 * head_size, seed=19)
    q, k = qkv[:, : 3 * head_size], qkv[:, 3 * head_size: 4 * head_size]
    positions, cache = torch.tensor([5, 0, 9, 2]), rope_cache(16, 12)
    for is_neox in (True, False):
        got = ops.rotary_embedding(positions, q, k, head_size, cache, is_neox, backend="triton")
        want = ops.rotary_embedding(positions, q, k, head_size, cache, is_neox, backend="cpu")
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(qkv, rand(T, 5 * head_size, seed=19))  # input untouched


@pytest.mark.skipif(REAL_TORCH_NPU, reason="a real torch_npu is installed: the emulation refuses to shadow it")
def test_the_three_backends_agree_on_a_transformer_step(emulated_npu):
    """The kernels chained as one decoder layer's pre-attention and MLP would chain them."""
    H, hd, T = 64, 16, 3
    x, residual, w = rand(T, H, seed=20), rand(T, H, seed=21), rand(H, seed=22)
    positions = torch.tensor([0, 1, 2])
    outputs = {}
    for backend in ("cpu", "triton", "npu"):
        with ops.use_backend(backend):
            h, res = ops.fused_add_rms_norm(x, residual, w, EPS)
            q, k = ops.rotary_embedding(positions, h, h[:, :hd], hd, COS_SIN, True)
            outputs[backend] = ops.silu_and_mul(torch.cat((q, k, k, k), dim=-1)), res
    for backend in ("triton", "npu"):
        torch.testing.assert_close(outputs[backend], outputs["cpu"])
