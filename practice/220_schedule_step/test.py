"""Tests of exercise 220: one scheduling step under a token budget."""
import random

import pytest

from submission import schedule_step

RUNNING = [("a", 11, 10), ("b", 30, 8)]
WAITING = [("c", 20, 0), ("d", 5, 0)]


def test_example_chunked():
    assert schedule_step(RUNNING, WAITING, budget=32, max_num_seqs=4) == [("a", 1), ("b", 22), ("c", 9)]


def test_example_not_chunked():
    assert schedule_step(RUNNING, WAITING, budget=32, max_num_seqs=4, chunked=False) == [("a", 1), ("b", 22)]


def test_example_max_num_seqs():
    assert schedule_step(RUNNING, WAITING, budget=64, max_num_seqs=3) == [("a", 1), ("b", 22), ("c", 20)]


def test_budget_runs_out_inside_running():
    running = [("a", 50, 10), ("b", 9, 8), ("c", 9, 8)]
    assert schedule_step(running, [("d", 3, 0)], budget=16, max_num_seqs=8) == [("a", 16)]
    assert schedule_step(running, [("d", 3, 0)], budget=41, max_num_seqs=8) == [("a", 40), ("b", 1)]


def test_fcfs_nobody_overtakes_without_chunking():
    waiting = [("big", 100, 0), ("small", 2, 0)]
    assert schedule_step([], waiting, budget=50, max_num_seqs=8, chunked=False) == []
    assert schedule_step([], waiting, budget=50, max_num_seqs=8) == [("big", 50)]


def test_prefix_hits_shrink_the_request():
    assert schedule_step([], [("p", 40, 32), ("q", 10, 0)], budget=12, max_num_seqs=8) == [("p", 8), ("q", 4)]


def test_max_num_seqs_counts_running_requests_even_if_unscheduled():
    running = [("a", 30, 0), ("b", 5, 4)]
    assert schedule_step(running, [("c", 1, 0)], budget=10, max_num_seqs=3) == [("a", 10)]
    assert schedule_step(running, [("c", 1, 0)], budget=40, max_num_seqs=2) == [("a", 30), ("b", 1)]


def test_finished_prefill_running_request_is_skipped():
    assert schedule_step([("a", 5, 5), ("b", 6, 5)], [], budget=4, max_num_seqs=4) == [("b", 1)]


def reference(running, waiting, budget, max_num_seqs, chunked):
    plan = []
    for rid, total, done in running:
        take = min(total - done, budget)
        if budget and take:
            plan.append((rid, take))
            budget -= take
    count = len(running)
    queue = list(waiting)
    while queue and budget and count < max_num_seqs:
        rid, total, done = queue.pop(0)
        want = total - done
        if want > budget and not chunked:
            break
        plan.append((rid, min(want, budget)))
        budget -= min(want, budget)
        count += 1
    return plan


@pytest.mark.parametrize("seed", range(8))
def test_random_steps_match_a_reference(seed):
    rng = random.Random(seed)
    for _ in range(50):
        running = []
        for i in range(rng.randint(0, 5)):
            total = rng.randint(1, 40)
            running.append((f"r{i}", total, rng.choice([total - 1, rng.randint(0, total)])))
        waiting = []
        for i in range(rng.randint(0, 5)):
            total = rng.randint(1, 40)
            waiting.append((f"w{i}", total, rng.randint(0, total - 1)))
        budget, seqs, chunked = rng.randint(1, 48), rng.randint(1, 8), rng.random() < 0.5
        got = schedule_step(list(running), list(waiting), budget, seqs, chunked)
        assert got == reference(running, waiting, budget, seqs, chunked), (running, waiting, budget, seqs, chunked)
