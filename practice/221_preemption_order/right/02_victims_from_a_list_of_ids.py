# Correct: Tracks the alive requests as a list of ids and a dict of held blocks; a request that is no longer alive ends the loop.
"""Exercise 221: allocation with preemption of the newest request."""
from __future__ import annotations


def allocate_with_preemption(running: list[tuple[str, int, int]], free_blocks: int) -> tuple[list[str], list[str]]:
    alive = [rid for rid, _, _ in running]
    held = {rid: h for rid, h, _ in running}
    scheduled, preempted = [], []
    for rid, _, need in running:
        if rid not in alive:
            break
        while free_blocks < need and rid in alive:
            victim = alive.pop()
            free_blocks += held[victim]
            preempted.append(victim)
        if rid not in alive:
            break
        free_blocks -= need
        scheduled.append(rid)
    return scheduled, preempted
