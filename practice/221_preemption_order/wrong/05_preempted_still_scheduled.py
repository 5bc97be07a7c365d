# Mistake: Preempts from a copy of the list but keeps iterating over the original, so preempted requests are scheduled later.
"""Exercise 221: allocation with preemption of the newest request."""
from __future__ import annotations


def allocate_with_preemption(running: list[tuple[str, int, int]], free_blocks: int) -> tuple[list[str], list[str]]:
    queue = list(running)
    scheduled: list[str] = []
    preempted: list[str] = []
    for request_id, _, need in running:
        while free_blocks < need:
            victim_id, held, _ = queue.pop()
            free_blocks += held
            preempted.append(victim_id)
            if victim_id == request_id:
                return scheduled, preempted
        free_blocks -= need
        scheduled.append(request_id)
    return scheduled, preempted
