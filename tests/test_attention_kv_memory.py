"""The KV-memory arithmetic of benchmarks/kv_memory.py on hand-checked traces."""
from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import kv_memory


def test_shares_on_a_hand_computed_trace():
    # One request: prompt 3, output 2 -> KV lengths 4 and 5 over its two decode steps (9 token slots in use).
    trace = [(3, 2)]
    assert kv_memory.useful_share(trace, "contiguous-max", max_model_len=10) == pytest.approx(9 / 20)
    assert kv_memory.useful_share(trace, "contiguous-exact", max_model_len=10) == pytest.approx(9 / 10)
    assert kv_memory.useful_share(trace, "paged", block_size=4) == pytest.approx(9 / (4 + 8))
    assert kv_memory.useful_share(trace, "paged", block_size=1) == 1.0


def test_trace_is_fixed_and_respects_the_cap():
    trace = kv_memory.make_trace(200, seed=0, max_model_len=512)
    assert trace == kv_memory.make_trace(200, seed=0, max_model_len=512)
    assert all(16 <= p and o >= 1 and p + o <= 512 for p, o in trace)
    assert kv_memory.make_trace(200, seed=1) != kv_memory.make_trace(200, seed=0)


def test_script_prints_ours_beside_theirs():
    out = subprocess.run([sys.executable, "benchmarks/kv_memory.py", "--requests", "50"], capture_output=True,
                         text=True, check=True, cwd=kv_memory.__file__.rsplit("/benchmarks/", 1)[0]).stdout
    assert "paged, block 16" in out and "20.4%-38.2%" in out and "under 4%" in out and "trace T1" in out
