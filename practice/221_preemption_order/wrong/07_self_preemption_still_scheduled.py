# Mistake: When the request preempts itself it stops preempting but is still scheduled (and takes its need from the blocks it gave back).
"""Exercise 221: allocation with preemption of the newest request."""
from __future__ import annotations


def allocate_with_preemption(running: list[tuple[str, int, int]], free_blocks: int) -> tuple[list[str], list[str]]:
    queue = list(running)
    scheduled: list[str] = []
    preempted: list[str] = []
    i = 0
    while i < len(queue):
        request_id, _, need = queue[i]
        while free_blocks < need:
            victim_id, held, _ = queue.pop()
            free_blocks += held
            preempted.append(victim_id)
            if victim_id == request_id:
                break
        free_blocks -= need
        scheduled.append(request_id)
        i += 1
    return scheduled, preempted
