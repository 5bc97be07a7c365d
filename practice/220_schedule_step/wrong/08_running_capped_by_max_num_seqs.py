# Mistake: Also stops scheduling running requests once max_num_seqs of them are in the plan, although every running request already holds its seat.
"""Exercise 220: one scheduling step under a token budget."""
from __future__ import annotations


def schedule_step(running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int]], budget: int,
                  max_num_seqs: int, chunked: bool = True) -> list[tuple[str, int]]:
    plan: list[tuple[str, int]] = []
    for request_id, num_tokens, num_computed in running:
        if budget == 0 or len(plan) >= max_num_seqs:
            break
        n = min(num_tokens - num_computed, budget)
        if n > 0:
            plan.append((request_id, n))
            budget -= n
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
