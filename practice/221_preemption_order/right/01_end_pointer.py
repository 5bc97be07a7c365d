# Correct: Keeps an end index of the requests still alive instead of popping from a copy, and breaks out of the loop when the request preempts itself.
"""Exercise 221: allocation with preemption of the newest request."""
from __future__ import annotations


def allocate_with_preemption(running: list[tuple[str, int, int]], free_blocks: int) -> tuple[list[str], list[str]]:
    scheduled, preempted = [], []
    end = len(running)  # running[:end] are not preempted
    i = 0
    while i < end:
        request_id, _, need = running[i]
        while free_blocks < need and end > i:
            end -= 1
            free_blocks += running[end][1]
            preempted.append(running[end][0])
        if end == i:  # it preempted itself
            break
        free_blocks -= need
        scheduled.append(request_id)
        i += 1
    return scheduled, preempted
