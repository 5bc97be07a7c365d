"""Tests of exercise 256: the judge starts real worker processes that run the submission's run_rank over gloo.

Each launch starts the ranks with multiprocessing on 127.0.0.1 (a free port), collects what they report,
and always kills and reaps every process it started, also when a rank fails or hangs.
"""
import multiprocessing as mp
import queue
import random
import socket
import sys
import time

import pytest

import submission as sub

HAS_FORK = "fork" in mp.get_all_start_methods() and sys.platform.startswith("linux")
CTX = mp.get_context("fork" if HAS_FORK else "spawn")
HANG_GUARD_S = 60   # a rank that neither reports nor exits by then is treated as hung


def free_init_method() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def twice(rank, world_size, inits, inputs, results):
    """Two groups one after the other in the same process: works only if the first was destroyed."""
    for init in inits:
        sub.run_rank(rank, world_size, init, inputs, results)


def guarded(target, rank, world_size, init, inputs, results):
    """In the child (fork only): pass an exception of the submission back to the test, then fail."""
    try:
        target(rank, world_size, init, inputs, results)
    except BaseException as exc:
        results.put(("error", rank, f"{type(exc).__name__}: {exc}"))
        raise


def launch(inputs, target=None, args=None):
    """Start one process per rank; return ({rank: [(summed, gathered), ...]}, exit codes)."""
    n = len(inputs)
    results = CTX.Queue()
    target = target or sub.run_rank
    init = args or free_init_method()   # one address for all ranks
    procs = [CTX.Process(target=guarded, args=(target, r, n, init, inputs, results), daemon=True) if HAS_FORK
             else CTX.Process(target=target, args=(r, n, init, inputs, results), daemon=True) for r in range(n)]
    reports = {}
    try:
        for p in procs:
            p.start()
        guard = time.monotonic() + HANG_GUARD_S
        while time.monotonic() < guard:
            try:
                first, second, third = results.get(timeout=0.2)
                if first == "error":
                    raise AssertionError(f"rank {second} raised {third}")
                reports.setdefault(first, []).append((second, third))
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break          # everyone has exited and the queue is drained
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(10)
        results.close()
    return reports, [p.exitcode for p in procs]


def check(inputs, reports, codes, rounds=1):
    n = len(inputs)
    assert codes == [0] * n, f"worker exit codes {codes} (0 = finished normally)"
    assert sorted(reports) == list(range(n)), f"reports came from ranks {sorted(reports)}, expected 0..{n - 1}"
    total = [sum(col) for col in zip(*inputs)]
    for rank, got in reports.items():
        assert len(got) == rounds
        for summed, gathered in got:
            assert summed == pytest.approx(total, abs=1e-6), f"rank {rank}: sum"
            assert gathered == [pytest.approx(v, abs=1e-6) for v in inputs], f"rank {rank}: all_gather"


def test_example_two_ranks():
    inputs = [[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]
    reports, codes = launch(inputs)
    check(inputs, reports, codes)
    assert reports[0][0][0] == [11.0, 22.0, 33.0]
    assert reports[1][0][1] == [[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]


@pytest.mark.parametrize("seed", range(2))
def test_random_values_in_fp32(seed):
    rng = random.Random(seed)
    n = 2 + seed                                     # 2, then 3 ranks
    inputs = [[rng.randint(-4000, 4000) / 64 + 1 / 1024 for _ in range(5)] for _ in range(n)]
    reports, codes = launch(inputs)
    check(inputs, reports, codes)


@pytest.mark.skipif(not HAS_FORK, reason="needs the fork start method (Linux)")
def test_group_is_destroyed_so_a_second_one_can_start():
    inputs = [[1.5, -2.0], [0.25, 4.0]]
    reports, codes = launch(inputs, target=twice, args=(free_init_method(), free_init_method()))
    check(inputs, reports, codes, rounds=2)
