"""Tests of exercise 256: the judge starts real worker processes that run the submission's run_rank over gloo.

Each launch starts the ranks with multiprocessing on 127.0.0.1 (a free port), collects what they report,
and always kills and reaps every process it started, also when a rank fails or hangs.
"""
import multiprocessing as mp
import queue
import random
import socket
import struct
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


class RefusingQueue:
    """A results queue whose put fails, to make run_rank fail after it has joined the group."""

    def put(self, item):
        raise RuntimeError("the test's queue refuses this report on purpose")


def three_runs(rank, world_size, inits, inputs, results):
    """Three groups one after the other in the same process, the second failing at results.put: the next
    init_process_group works only if every earlier group was destroyed, the failed one included."""
    sub.run_rank(rank, world_size, inits[0], inputs, results)
    try:
        sub.run_rank(rank, world_size, inits[1], inputs, RefusingQueue())
    except Exception:
        pass                                          # the error may propagate or not; the group must be gone
    try:
        sub.run_rank(rank, world_size, inits[2], inputs, results)
    except Exception as exc:
        raise RuntimeError(f"a new group could not start after a run_rank whose results.put raised ({exc}); "
                           "destroy the process group also on an error (try/finally)") from exc


def guarded(target, rank, world_size, init, inputs, results):
    """In the child (fork only): pass an exception of the submission back to the test, then fail."""
    try:
        target(rank, world_size, init, inputs, results)
    except BaseException as exc:
        results.put(("error", rank, f"{type(exc).__name__}: {exc}"))
        raise


def launch_groups(groups):
    """Start every group's ranks at once, one process per rank; groups are (inputs, target, init) with their own
    queue. Return, per group, ({rank: [(summed, gathered), ...]}, exit codes). Every process is killed and reaped."""
    started = []
    for inputs, target, init in groups:
        results = CTX.Queue()
        target = target or sub.run_rank
        init = init or free_init_method()
        n = len(inputs)
        procs = [CTX.Process(target=guarded, args=(target, r, n, init, inputs, results), daemon=True) if HAS_FORK
                 else CTX.Process(target=target, args=(r, n, init, inputs, results), daemon=True) for r in range(n)]
        started.append((results, procs, {}))
    try:
        for _, procs, _ in started:
            for p in procs:
                p.start()
        guard = time.monotonic() + HANG_GUARD_S
        while time.monotonic() < guard:
            got_any = False
            for g, (results, procs, reports) in enumerate(started):
                try:
                    first, second, third = results.get_nowait()
                except queue.Empty:
                    continue
                got_any = True
                if first == "error":
                    raise AssertionError(f"rank {second}{f' of group {g}' if len(started) > 1 else ''} raised {third}")
                reports.setdefault(first, []).append((second, third))
            if not got_any:
                if not any(p.is_alive() for _, procs, _ in started for p in procs):
                    break          # everyone has exited and the queues are drained
                time.sleep(0.05)
    finally:
        for _, procs, _ in started:
            for p in procs:
                if p.is_alive():
                    p.kill()
        for results, procs, _ in started:
            for p in procs:
                p.join(10)
            results.close()
    return [(reports, [p.exitcode for p in procs]) for _, procs, reports in started]


def launch(inputs, target=None, args=None):
    """One group: ({rank: [(summed, gathered), ...]}, exit codes)."""
    return launch_groups([(inputs, target, args)])[0]


def fp32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def check(inputs, reports, codes, rounds=1):
    """Every rank reported `rounds` times the fp32 sum and the fp32 inputs in rank order, exactly."""
    n = len(inputs)
    assert codes == [0] * n, f"worker exit codes {codes} (0 = finished normally)"
    assert sorted(reports) == list(range(n)), f"reports came from ranks {sorted(reports)}, expected 0..{n - 1}"
    rows = [[fp32(v) for v in row] for row in inputs]           # what an fp32 tensor of each input holds
    total = [sum(col) for col in zip(*rows)]                    # exact: the inputs are short binary fractions
    for rank, got in sorted(reports.items()):
        assert len(got) == rounds, f"rank {rank} reported {len(got)} times, expected {rounds}"
        for summed, gathered in got:
            assert summed == total, f"rank {rank}: sum {summed}, expected the fp32 sum {total} of inputs {inputs}"
            assert gathered == rows, f"rank {rank}: all_gather {gathered}, expected the fp32 inputs {rows}"


def random_inputs(rng, n):
    """Values that need 12 significant bits (bf16 has 8) and carry 2**-40, which fp32 drops and fp64 keeps."""
    return [[rng.choice([-1, 1]) * rng.randint(64, 4000) / 64 + 2 ** -40 for _ in range(5)] for _ in range(n)]


def test_example_two_ranks():
    inputs = [[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]
    reports, codes = launch(inputs)
    check(inputs, reports, codes)
    assert reports[0][0][0] == [11.0, 22.0, 33.0]
    assert reports[1][0][1] == [[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]


def test_two_groups_at_the_same_time_in_fp32():
    """A 3-rank and a 2-rank group run at once, each at its own address: a fixed port would mix them up."""
    rng = random.Random(0)
    groups = [random_inputs(rng, 3), random_inputs(rng, 2)]
    outcomes = launch_groups([(inputs, None, None) for inputs in groups])
    for inputs, (reports, codes) in zip(groups, outcomes):
        check(inputs, reports, codes)


@pytest.mark.skipif(not HAS_FORK, reason="needs the fork start method (Linux)")
def test_group_is_destroyed_also_after_an_error():
    inputs = [[1.5, -2.0], [0.25, 4.0]]
    reports, codes = launch(inputs, target=three_runs, args=tuple(free_init_method() for _ in range(3)))
    check(inputs, reports, codes, rounds=2)
