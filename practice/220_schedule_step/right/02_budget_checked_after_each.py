# Correct: Checks the budget after each grant (and skips zero wants with continue) rather than at the top of the loop.
"""Exercise 220: one scheduling step under a token budget."""
from __future__ import annotations


def schedule_step(running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int]], budget: int,
                  max_num_seqs: int, chunked: bool = True) -> list[tuple[str, int]]:
    plan: list[tuple[str, int]] = []
    for request_id, num_tokens, num_computed in running:
        n = min(num_tokens - num_computed, budget)
        if n <= 0:
            if budget == 0:
                break
            continue
        plan.append((request_id, n))
        budget -= n
        if budget == 0:
            break
    num_running = len(running)
    for request_id, num_tokens, num_computed in waiting:
        if budget == 0 or num_running >= max_num_seqs:
            break
        n = num_tokens - num_computed
        if n > budget:
            if not chunked:
                break
            n = budget
        plan.append((request_id, n))
        budget -= n
        num_running += 1
    return plan
