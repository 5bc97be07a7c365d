"""Exercise 221: allocation with preemption of the newest request. Keep the names."""
from __future__ import annotations


def allocate_with_preemption(running: list[tuple[str, int, int]], free_blocks: int) -> tuple[list[str], list[str]]:
    scheduled: list[str] = []
    preempted: list[str] = []
    # TODO: for each request in order, preempt the newest remaining request while it does not fit;
    #       stop when a request has to preempt itself
    raise NotImplementedError("allocate_with_preemption")
