"""Tests of exercise 221: allocation with preemption of the newest request."""
import random

import pytest

from submission import allocate_with_preemption


def test_example_newest_is_preempted():
    assert allocate_with_preemption([("a", 2, 1), ("b", 2, 1), ("c", 2, 1)], 0) == (["a", "b"], ["c"])


def test_example_request_preempts_itself():
    assert allocate_with_preemption([("a", 3, 0), ("b", 1, 2)], 1) == (["a"], ["b"])


def test_enough_free_blocks_preempts_nobody():
    assert allocate_with_preemption([("a", 1, 1), ("b", 1, 2)], 3) == (["a", "b"], [])


def test_several_preemptions_for_one_request():
    running = [("a", 4, 3), ("b", 1, 1), ("c", 1, 1), ("d", 1, 1)]
    # a needs 3: d, c, b go (1 block each); nothing is left to schedule after a
    assert allocate_with_preemption(running, 0) == (["a"], ["d", "c", "b"])


def test_preempted_request_never_keeps_its_need():
    running = [("a", 1, 2), ("b", 5, 3)]
    # a preempts b (5 back): a takes 2, 3 blocks stay free; b is gone, not scheduled
    assert allocate_with_preemption(running, 0) == (["a"], ["b"])


def test_zero_need_always_fits():
    assert allocate_with_preemption([("a", 2, 0), ("b", 2, 0)], 0) == (["a", "b"], [])
    assert allocate_with_preemption([], 5) == ([], [])


def reference(running, free):
    alive = [r[0] for r in running]
    info = {r[0]: r for r in running}
    done, gone = [], []
    for rid, _, need in running:
        if rid not in alive:
            break
        while free < need:
            victim = alive.pop()
            free += info[victim][1]
            gone.append(victim)
            if victim == rid:
                return done, gone
        free -= need
        done.append(rid)
    return done, gone


@pytest.mark.parametrize("seed", range(8))
def test_random_cases_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(60):
        running = [(f"r{i}", rng.randint(0, 4), rng.randint(0, 3)) for i in range(rng.randint(0, 7))]
        free = rng.randint(0, 4)
        assert allocate_with_preemption(list(running), free) == reference(running, free), (running, free)
