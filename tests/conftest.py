"""Shared test set-up.

TRITON_INTERPRET must be set before any ``@triton.jit`` decorator runs, so it is set here, at the
top of the first module pytest imports. The suite runs every Triton kernel in the Triton interpreter
on CPU tensors, GPU or not; results from it say "Triton interpreter", never "GPU".

On an NVIDIA machine, ``MINI_PLATFORM_TRITON_GPU=1 python -m pytest -m cuda`` leaves the interpreter
off and runs the tests marked ``cuda``: the Triton kernels compiled for the GPU, against the CPU
reference (tests/test_cuda.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if os.environ.get("MINI_PLATFORM_TRITON_GPU") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Tiny tensors gain nothing from intra-op threads; on a busy 2-core machine OpenMP threads waiting
# on each other make small matmuls 10-20x slower. Set before torch is imported anywhere.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The engine tests run on the CPU platform unless a test selects another on purpose.
os.environ.setdefault("MINI_PLATFORM_TARGET_DEVICE", "cpu")

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402


@pytest.fixture
def emulated_npu():
    """The torch_npu emulation installed as ``torch_npu`` for the duration of one test.

    On an Ascend machine (a real torch_npu installed) the emulated tests are skipped: the tests
    marked ``npu`` run the same checks against the real ops there.
    """
    import importlib.util

    if importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("a real torch_npu is installed: tests marked npu run against it instead")
    from mini_platform.ascend.emulation import emulated_torch_npu

    with emulated_torch_npu() as module:
        yield module


@pytest.fixture(scope="session", autouse=True)
def engine_judge_cache(tmp_path_factory):
    """``judge.py engine`` caches checkpoints and engine runs by content (practice/judging/engine_cache.py):
    the suite's own cache, shared by its tests, never the user's ``~/.cache``."""
    folder = tmp_path_factory.mktemp("engine-judge-cache")
    saved = os.environ.get("MINI_PLATFORM_JUDGE_CACHE")
    os.environ["MINI_PLATFORM_JUDGE_CACHE"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("MINI_PLATFORM_JUDGE_CACHE", None)
    else:
        os.environ["MINI_PLATFORM_JUDGE_CACHE"] = saved


def pytest_terminal_summary(terminalreporter):
    """Each executed notebook's time against its goal (tests/test_notebooks.py records them)."""
    rows = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        props = dict(getattr(report, "user_properties", ()))
        if "execution_seconds" in props and report.when == "call":
            name = report.nodeid.rsplit("[", 1)[-1].rstrip("]")
            rows.append((name, props["execution_seconds"], props.get("goal_seconds", 60)))
    if rows:
        terminalreporter.section("notebook execution times")
        for name, seconds, goal in sorted(rows):
            mark = "ok" if seconds < goal else "OVER"
            terminalreporter.write_line(f"{name:<32} {seconds:6.1f} s   goal < {goal} s   {mark}")
