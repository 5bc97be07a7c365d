"""benchmarks/cold_calls.py times each small kernel call warm and after reading other memory, at every size asked."""
from __future__ import annotations

from benchmarks import cold_calls


def test_every_kernel_call_is_timed_warm_and_after_each_buffer():
    calls = cold_calls.kernel_calls()
    assert set(calls) == {"fused_add_rms_norm", "rotary_embedding", "silu_and_mul"}
    results = cold_calls.cold_times(calls, after_mib=[1, 2], repeat=2)
    assert set(results) == set(calls)
    for by in results.values():
        assert list(by) == ["warm", "after 1 MiB", "after 2 MiB"] and all(t > 0 for t in by.values())
