"""The numba-compiled kernels of the ``cpu`` backend (``mini_platform/ops/cpu/compiled.py``) against the torch functions
they stand in for: the same function run with ``MINI_PLATFORM_CPU_COMPILED=0`` and ``=1``. Rotary embedding and the
KV cache write must be bitwise equal, in fp32 and bf16; RMSNorm equal up to float rounding (its sum runs in another
order), the bf16 GEMV of ``ops.linear`` within one bf16 rounding of the exact result; bad input fails the same way on
both paths. The compiled decode attention is tested in tests/test_attention.py (and its bf16 form here).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mini_platform import envs
from mini_platform.ops.cpu import activation, attention, compiled, layernorm, linear, rotary
from mini_platform.compilation.cpu_graph import CPUGraphWrapper

pytestmark = pytest.mark.skipif(compiled._kernel() is None, reason="numba is not installed")


def both(monkeypatch, fn):
    """``fn()`` on the compiled path, then on the torch path."""
    monkeypatch.setenv(envs.CPU_COMPILED, "1")
    fast = fn()
    monkeypatch.setenv(envs.CPU_COMPILED, "0")
    return fast, fn()


@pytest.mark.parametrize("neox, rot_dim", [(True, 16), (False, 16), (True, 8), (False, 8)])
def test_rotary_is_bitwise_the_torch_rotation(monkeypatch, neox, rot_dim):
    g = torch.Generator().manual_seed(0)
    positions = torch.tensor([0, 5, 31, 7, 5])
    query, key = torch.randn(5, 4 * 16, generator=g), torch.randn(5, 2 * 16, generator=g)
    cache = torch.randn(32, rot_dim, generator=g)
    assert compiled.available(query, key, cache)
    (q1, k1), (q2, k2) = both(monkeypatch, lambda: rotary.rotary_embedding(positions, query, key, 16, cache, neox))
    assert torch.equal(q1, q2) and torch.equal(k1, k2)
    strided = torch.randn(5, 128, generator=g)[:, ::2]   # a non-contiguous query: read through a copy
    (q1, _), (q2, _) = both(monkeypatch, lambda: rotary.rotary_embedding(positions, strided, key, 16, cache, neox))
    assert torch.equal(q1, q2)


def test_rotary_position_past_the_cache_raises_index_error_on_both_paths(monkeypatch):
    query, key, cache = torch.randn(2, 16), torch.randn(2, 16), torch.randn(8, 16)
    for value in ("1", "0"):
        monkeypatch.setenv(envs.CPU_COMPILED, value)
        with pytest.raises(IndexError):
            rotary.rotary_embedding(torch.tensor([3, 8]), query, key, 16, cache, True)


@pytest.mark.parametrize("shape", [(7, 64), (2, 3, 64)])
def test_rms_norm_equals_torch_up_to_rounding_and_the_residual_sum_exactly(monkeypatch, shape):
    g = torch.Generator().manual_seed(1)
    x, residual, weight = torch.randn(shape, generator=g), torch.randn(shape, generator=g), torch.randn(64, generator=g)
    fast, slow = both(monkeypatch, lambda: layernorm.rms_norm(x, weight, 1e-5))
    assert fast.shape == slow.shape == x.shape
    torch.testing.assert_close(fast, slow, rtol=1e-6, atol=1e-6)
    (out1, sum1), (out2, sum2) = both(monkeypatch, lambda: layernorm.fused_add_rms_norm(x, residual, weight, 1e-5))
    assert torch.equal(sum1, sum2) and sum1.shape == x.shape
    torch.testing.assert_close(out1, out2, rtol=1e-6, atol=1e-6)
    assert torch.equal(x, torch.randn(shape, generator=torch.Generator().manual_seed(1)))   # inputs untouched


@pytest.mark.parametrize("shape", [(7, 64), (2, 3, 64), (64,), (0, 64)])
def test_silu_and_mul_equals_torch_up_to_rounding_in_fp32_and_bf16(monkeypatch, shape):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(shape, generator=g) * 8
    if x.numel():
        x.view(-1)[:4] = torch.tensor([100.0, -100.0, 0.0, -0.0])   # past exp's range both ways, and both zeros
    assert compiled.available_widened(x)
    fast, slow = both(monkeypatch, lambda: activation.silu_and_mul(x))
    assert fast.shape == slow.shape == (*shape[:-1], 32) and fast.dtype == torch.float32
    torch.testing.assert_close(fast, slow, rtol=1e-6, atol=1e-6)
    xb = x.bfloat16()
    fast, slow = both(monkeypatch, lambda: activation.silu_and_mul(xb))
    gate, up = xb.float().chunk(2, dim=-1)
    exact = F.silu(gate) * up
    assert fast.dtype == torch.bfloat16
    torch.testing.assert_close(fast.float(), exact, rtol=2 ** -8, atol=1e-6)   # one bf16 rounding
    if x.numel():
        assert (fast == slow).float().mean() > 0.95   # the torch path rounds the same sums; its exp differs a little
    for value in ("1", "0"):
        monkeypatch.setenv(envs.CPU_COMPILED, value)
        with pytest.raises(ValueError, match="even last dimension"):
            activation.silu_and_mul(torch.ones(2, 7))


def test_cache_write_is_bitwise_the_torch_write_and_skips_padding_slots(monkeypatch):
    g = torch.Generator().manual_seed(2)
    key, value = torch.randn(5, 2, 8, generator=g), torch.randn(5, 2, 8, generator=g)
    slots = torch.tensor([9, -1, 0, 15, -1], dtype=torch.int32)

    def write():
        caches = torch.full((4, 4, 2, 8), float("nan")), torch.full((4, 4, 2, 8), float("nan"))
        attention.reshape_and_cache(key, value, *caches, slots)
        return caches

    (k1, v1), (k2, v2) = both(monkeypatch, write)
    assert torch.equal(k1.nan_to_num(7.0), k2.nan_to_num(7.0)) and torch.equal(v1.nan_to_num(7.0), v2.nan_to_num(7.0))
    assert torch.equal(k1.view(16, 2, 8)[9], key[0]) and k1.isnan().sum() == (16 - 3) * 16


def test_cache_write_past_the_cache_names_the_slot_and_writes_nothing(monkeypatch):
    key = torch.randn(2, 1, 4)
    for value in ("1", "0"):
        monkeypatch.setenv(envs.CPU_COMPILED, value)
        cache = torch.zeros(2, 2, 1, 4)
        with pytest.raises(ValueError, match="slot 4 is outside the cache"):
            attention.reshape_and_cache(key, key, cache, cache.clone(), torch.tensor([1, 4]))
        assert not cache.any()
    monkeypatch.setenv(envs.CPU_COMPILED, "1")
    column = torch.zeros(2, 2, 2, 1, 4)[:, :, 0]   # a cache that is not contiguous: the torch path writes it
    attention.reshape_and_cache(key, key, column, column, torch.tensor([1, 2]))
    assert torch.equal(column.reshape(4, 1, 4)[2], key[1])


def test_a_capture_records_the_compiled_kernel_and_tracing_gets_the_torch_one():
    """A CPU graph records the numba call as one node that reruns it on the captured memory (new values of x reach the
    replay); torch.compile cannot see inside a numba call, so its trace gets the torch kernel."""
    x, weight = torch.randn(2, 64), torch.randn(64)
    assert compiled.available(x, weight)
    seen = []

    def body(size):
        seen.append(compiled.available(x, weight))
        return layernorm.rms_norm(x, weight, 1e-6)

    graph = CPUGraphWrapper(body, torch.device("cpu"))
    graph.capture(2)
    (cpu_graph, _), = graph.entries.values()
    assert seen == [True] and [repr(node) for node in cpu_graph.nodes] == ["KernelNode(rms_norm)"]
    x.copy_(torch.randn(2, 64))
    torch.testing.assert_close(graph.replay(2, None), torch.rms_norm(x, (64,), weight, 1e-6), rtol=1e-6, atol=1e-6)
    traced = torch.compile(lambda t: layernorm.rms_norm(t, weight, 1e-6), backend="eager", fullgraph=True)
    torch.testing.assert_close(traced(x), layernorm.rms_norm(x, weight, 1e-6), rtol=1e-6, atol=1e-6)


# -- the bf16 GEMV behind ops.linear for one token ------------------------------------------------------------------
def _bf16(generator, *shape):
    return (torch.randn(*shape, generator=generator) * 0.1).bfloat16()


@pytest.mark.parametrize("rows, width, bias", [(1152, 896, True), (896, 4864, False), (7, 6, True), (33, 100, False)])
def test_bf16_gemv_equals_fp32_products_rounded_once(monkeypatch, rows, width, bias):
    """The GEMV sums fp32 products of the exact bf16 values and rounds once: within one bf16 rounding of the fp32
    result, and equal to torch's bf16 F.linear but for a last bit here and there (its sum runs in another order)."""
    g = torch.Generator().manual_seed(3)
    x, weight = _bf16(g, 1, width), _bf16(g, rows, width)
    b = _bf16(g, rows) if bias else None
    assert compiled.available(x, weight, dtype=torch.bfloat16) and linear._one_bf16_token(x, weight, b)
    fast, slow = both(monkeypatch, lambda: linear.linear(x, weight, b))
    assert fast.dtype == torch.bfloat16 and fast.shape == (1, rows)
    exact = F.linear(x.float(), weight.float(), None if b is None else b.float())
    torch.testing.assert_close(fast.float(), exact, rtol=2 ** -8, atol=1e-6)   # one bf16 rounding
    assert (fast == slow).float().mean() > 0.99
    assert torch.equal(slow, F.linear(x, weight, b))   # the torch path is F.linear itself


def test_bf16_gemv_reads_every_column_and_row():
    """A one-hot input picks one column of the weight, exactly: no column or row skipped or read twice, whatever the
    prefetch distance (rows near the end are not prefetched)."""
    g = torch.Generator().manual_seed(4)
    weight = _bf16(g, 37, 70)
    for k in (0, 31, 32, 69):
        x = torch.zeros(1, 70, dtype=torch.bfloat16)
        x[0, k] = 1.0
        assert torch.equal(compiled.linear_bf16(x, weight), weight[:, k].unsqueeze(0))
    x = _bf16(g, 1, 70)
    bias = _bf16(g, 37)
    three_dims = compiled.linear_bf16(x.view(1, 1, 70), weight, bias)
    assert three_dims.shape == (1, 1, 37) and torch.equal(three_dims.view(1, 37), compiled.linear_bf16(x, weight, bias))


def test_bf16_gemv_rounds_each_sum_as_torch_rounds_fp32_to_bf16():
    """The kernel rounds its fp32 sums to bf16 itself: ties to even and overflow to inf, bit for bit what
    ``.to(torch.bfloat16)`` gives for the same sums, and NaN to a NaN (whose sign and payload no one reads)."""
    big = torch.finfo(torch.bfloat16).max
    weight = torch.zeros(6, 4, dtype=torch.bfloat16)
    weight[0, 0] = float("inf")                   # inf * 1 -> inf
    weight[1, 0], weight[1, 1] = float("inf"), float("-inf")   # inf - inf -> NaN
    weight[2, 0], weight[2, 1] = big, big         # past bf16's largest: inf
    weight[3, 0], weight[3, 1] = 1.0, 2.0 ** -8   # 1 + 2**-8: a tie between 1 and 1 + 2**-7, to even (1)
    weight[4, 0], weight[4, 1] = 1.0 + 2.0 ** -7, 2.0 ** -8   # the other tie, to even (1 + 2**-6)
    weight[5, 0] = -3.0
    x = torch.tensor([[1.0, 1.0, 0.0, 0.0]], dtype=torch.bfloat16)
    fast = compiled.linear_bf16(x, weight)
    exact = F.linear(x.float(), weight.float()).bfloat16()
    assert fast[0, 1].isnan() and exact[0, 1].isnan()
    keep = [0, 2, 3, 4, 5]
    assert torch.equal(fast[:, keep].view(torch.int16), exact[:, keep].view(torch.int16)), (fast, exact)
    assert fast[0, 3] == 1.0 and fast[0, 4] == 1.0 + 2.0 ** -6


def test_linear_takes_the_gemv_only_for_one_contiguous_bf16_token(monkeypatch):
    calls = []
    monkeypatch.setattr(compiled, "linear_bf16", lambda *args: calls.append(args) or F.linear(*args))
    g = torch.Generator().manual_seed(5)
    weight = _bf16(g, 16, 32)
    linear.linear(_bf16(g, 1, 32), weight)
    linear.linear(_bf16(g, 1, 1, 32), weight)
    assert len(calls) == 2
    for x, w in [(_bf16(g, 2, 32), weight),                     # two tokens: a GEMM, torch's
                 (_bf16(g, 1, 32).float(), weight.float()),     # fp32: torch's F.linear reads it fast already
                 (_bf16(g, 1, 32), _bf16(g, 32, 16).t()),       # a transposed weight
                 (_bf16(g, 1, 31), _bf16(g, 16, 31)),           # an odd K: its rows are not whole 32-bit words
                 (_bf16(g, 1, 32), _bf16(g, 16 * 32 + 1)[1:].view(16, 32))]:   # from an odd offset: the same
        assert torch.equal(linear.linear(x, w), F.linear(x, w))
    assert len(calls) == 2
    monkeypatch.setenv(envs.CPU_COMPILED, "0")
    linear.linear(_bf16(g, 1, 32), weight)
    assert len(calls) == 2


@pytest.mark.parametrize("x, weight, bias", [
    (torch.ones(1, 31, dtype=torch.bfloat16), torch.ones(16, 32, dtype=torch.bfloat16), None),
    (torch.ones(1, 32, dtype=torch.bfloat16), torch.ones(16, 32, dtype=torch.bfloat16),
     torch.ones(15, dtype=torch.bfloat16)),
])
def test_linear_with_mismatched_shapes_raises_torch_error(x, weight, bias):
    """Shapes the GEMV would read past are never given to it: F.linear runs and raises torch's own error."""
    with pytest.raises(RuntimeError) as fast:
        linear.linear(x, weight, bias)
    with pytest.raises(RuntimeError) as torch_error:
        F.linear(x, weight, bias)
    assert str(fast.value) == str(torch_error.value)


def test_exp_nonpositive_is_within_1e7_of_exp_plain_and_compiled():
    """The softmax's exp in the decode kernel (arithmetic LLVM vectorizes instead of a libm call per element)."""
    import numba
    grid = np.concatenate([-np.logspace(-8, np.log10(87.0), 20000), [0.0, -1e-30, -0.5, -np.log(2.0), -86.99]])
    grid = grid.astype(np.float32)
    exact = np.exp(grid.astype(np.float64))
    compiled._register_helpers()
    jitted = numba.njit(lambda xs: [compiled.exp_nonpositive(x) for x in xs])
    for values in ([compiled.exp_nonpositive(x) for x in grid], jitted(grid)):
        values = np.asarray(values, dtype=np.float64)
        assert (np.abs(values / exact - 1) < 1e-7).all()
    assert compiled.exp_nonpositive(np.float32(0.0)) == 1.0
    assert compiled.exp_nonpositive(np.float32(-87.5)) == 0.0 and compiled.exp_nonpositive(np.float32(-1e4)) == 0.0


# -- bf16 through the same kernels: the decode attention and the cache write read bf16 bits, rotary and RMSNorm widen --
def test_bf16_rotary_and_cache_write_are_bitwise_the_torch_ones(monkeypatch):
    g = torch.Generator().manual_seed(6)
    positions = torch.tensor([0, 5, 31, 7, 5])
    query, key = _bf16(g, 5, 4 * 16), _bf16(g, 5, 2 * 16)
    cache = torch.randn(32, 16, generator=g)
    for neox, table in [(True, cache), (False, cache), (True, cache.bfloat16())]:   # an fp32 or a bf16 cos/sin cache
        (q1, k1), (q2, k2) = both(monkeypatch, lambda: rotary.rotary_embedding(positions, query, key, 16, table, neox))
        assert q1.dtype == torch.bfloat16 and torch.equal(q1, q2) and torch.equal(k1, k2)
    new, slots = _bf16(g, 5, 2, 8), torch.tensor([9, -1, 0, 15, -1], dtype=torch.int32)

    def write():
        caches = (torch.full((4, 4, 2, 8), float("nan"), dtype=torch.bfloat16),
                  torch.full((4, 4, 2, 8), float("nan"), dtype=torch.bfloat16))
        attention.reshape_and_cache(new, new, *caches, slots)
        return caches

    calls = []
    monkeypatch.setattr(compiled, "_kernel", lambda name="decode", _k=compiled._kernel: calls.append(name) or _k(name))
    (k1, v1), (k2, v2) = both(monkeypatch, write)
    assert calls.count("reshape_and_cache") == 1   # the compiled write ran (the second run is the torch one)
    assert torch.equal(k1.nan_to_num(7.0), k2.nan_to_num(7.0)) and torch.equal(k1.view(16, 2, 8)[9], new[0])


def test_bf16_rms_norm_is_torch_rms_norm_up_to_rounding(monkeypatch):
    g = torch.Generator().manual_seed(7)
    x, residual, weight = _bf16(g, 6, 96), _bf16(g, 6, 96), (1 + _bf16(g, 96)).bfloat16()
    assert compiled.available(x, weight, dtype=torch.bfloat16)
    fast, slow = both(monkeypatch, lambda: layernorm.rms_norm(x, weight, 1e-6))
    assert fast.dtype == torch.bfloat16
    torch.testing.assert_close(fast, slow, rtol=2 ** -7, atol=0)   # at most one bf16 rounding apart
    exact = torch.rms_norm(x.float(), (96,), weight.float(), 1e-6)
    torch.testing.assert_close(fast.float(), exact, rtol=2 ** -8, atol=1e-6)
    calls = []
    real = compiled.rms_norm
    monkeypatch.setattr(compiled, "rms_norm", lambda *args: calls.append(len(args)) or real(*args))
    (out1, sum1), (out2, sum2) = both(monkeypatch, lambda: layernorm.fused_add_rms_norm(x, residual, weight, 1e-6))
    assert calls == [4]   # the compiled path ran the add and the norm in one call (the torch one none)
    assert torch.equal(sum1, sum2) and sum1.dtype == out1.dtype == torch.bfloat16   # the sum rounded before the norm
    torch.testing.assert_close(out1, out2, rtol=2 ** -7, atol=0)
    # The kernel run as plain Python (its helpers' own code) gives the same bits as the compiled one.
    x8, residual8, weight8 = x[:2, :8].contiguous(), residual[:2, :8].contiguous(), weight[:8].contiguous()
    bits = [t.view(torch.int16).numpy() for t in (x8, residual8, weight8)]
    out, summed = np.empty_like(bits[0]), np.empty_like(bits[0])
    compiled.rms_norm_kernel(bits[0], bits[1], bits[2], 1e-6, out, summed)
    fast_out, fast_sum = compiled.rms_norm(x8, weight8, 1e-6, residual8)
    assert np.array_equal(summed, fast_sum.view(torch.int16).numpy())
    assert np.abs(out.astype(np.int32) - fast_out.view(torch.int16).numpy()).max() <= 1   # the sum's order aside


@pytest.mark.parametrize("seed", range(3))
def test_bf16_decode_attention_matches_the_torch_path_and_reads_no_unwritten_slot(monkeypatch, seed):
    import random
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    block_size, (num_heads, num_kv_heads) = rng.choice([1, 4, 16]), rng.choice([(4, 4), (4, 2), (6, 1)])
    lengths = [rng.randint(1, 40) for _ in range(rng.randint(1, 6))]
    width = -(-max(lengths) // block_size)
    key_cache = torch.full((len(lengths) * width + 1, block_size, num_kv_heads, 16), float("nan"), dtype=torch.bfloat16)
    value_cache = key_cache.clone()
    tables = torch.randperm(key_cache.shape[0] - 1, generator=g)[:len(lengths) * width].view(-1, width).int()
    for b, n in enumerate(lengths):   # write only the slots each request uses: the rest stays NaN
        for p in range(n):
            key_cache[tables[b, p // block_size], p % block_size] = _bf16(g, num_kv_heads, 16)
            value_cache[tables[b, p // block_size], p % block_size] = _bf16(g, num_kv_heads, 16)
    query, seq_lens = _bf16(g, len(lengths), num_heads, 16), torch.tensor(lengths, dtype=torch.int32)
    assert compiled.available(query, key_cache, value_cache, dtype=torch.bfloat16)
    fast, slow = both(monkeypatch, lambda: attention.paged_decode_attention(query, key_cache, value_cache, tables,
                                                                          seq_lens, 0.25))
    assert fast.dtype == torch.bfloat16 and not fast.isnan().any()
    torch.testing.assert_close(fast, slow, rtol=2 ** -7, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_lasting_tensors_numpy_view_is_kept_until_its_memory_or_shape_changes(dtype):
    """Weights and caches are read through a numpy view made once: the same view while the tensor is unchanged (and
    writes through it land in the tensor), a new one once ``.data`` points elsewhere or has another shape; a
    non-contiguous tensor gets a fresh copy every time; and the kept view does not keep the tensor object alive."""
    import gc
    import weakref

    t = torch.zeros(4, 6, dtype=dtype)
    view = compiled._lasting_array(t)
    assert compiled._lasting_array(t) is view
    view[1, 2] = compiled._array(torch.ones(1, dtype=dtype))[0]
    assert t[1, 2] == 1
    t.data = torch.full((4, 6), 2.0, dtype=dtype)                       # new memory
    assert torch.equal(compiled._tensor(compiled._lasting_array(t), dtype), t)
    t.data = t.data[:3]                                                 # the same address, fewer rows
    assert compiled._lasting_array(t).shape == (3, 6)
    columns = torch.arange(24, dtype=dtype).view(4, 6)[:, ::2]
    first = compiled._lasting_array(columns)
    assert first.shape == (4, 3) and compiled._lasting_array(columns) is not first
    kept = len(compiled._LASTING)
    gc.disable()
    try:
        alive = weakref.ref(t)
        del t
        assert alive() is None   # freed by its count, without waiting for the cycle collector
        assert len(compiled._LASTING) == kept - 1   # and its view with it
    finally:
        gc.enable()
