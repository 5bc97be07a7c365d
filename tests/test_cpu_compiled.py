"""The numba-compiled kernels of the ``cpu`` backend (``mini_platform/ops/cpu/compiled.py``) against the torch functions
they stand in for: the same function run with ``MINI_PLATFORM_CPU_COMPILED=0`` and ``=1``. Rotary embedding and the
KV cache write must be bitwise equal; RMSNorm equal up to float rounding (its sum runs in another order); bad
input fails the same way on both paths. The compiled decode attention is tested in tests/test_attention.py.
"""
from __future__ import annotations

import pytest
import torch

from mini_platform import envs
from mini_platform.ops.cpu import attention, compiled, layernorm, rotary
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


def test_capture_and_tracing_get_the_torch_kernels():
    x, weight = torch.randn(2, 64), torch.randn(64)
    assert compiled.available(x, weight)
    seen = []

    def body(size):
        seen.append(compiled.available(x, weight))
        return layernorm.rms_norm(x, weight, 1e-6)

    graph = CPUGraphWrapper(body, torch.device("cpu"))
    graph.capture(2)
    torch.testing.assert_close(graph.replay(2, None), layernorm.rms_norm(x, weight, 1e-6), rtol=1e-6, atol=1e-6)
    assert seen == [False]   # a numba call inside a capture would not be recorded, so it never runs there
    traced = torch.compile(lambda t: layernorm.rms_norm(t, weight, 1e-6), backend="eager", fullgraph=True)
    torch.testing.assert_close(traced(x), layernorm.rms_norm(x, weight, 1e-6), rtol=1e-6, atol=1e-6)
