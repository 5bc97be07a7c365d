# Correct: Walks the waiting queue with an index and counts free seats down from max_num_seqs - len(running) instead of counting running requests up.
"""Exercise 220: one scheduling step under a token budget."""
from __future__ import annotations


def schedule_step(running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int]], budget: int,
                  max_num_seqs: int, chunked: bool = True) -> list[tuple[str, int]]:
    plan: list[tuple[str, int]] = []
    for request_id, num_tokens, num_computed in running:
        if budget == 0:
            break
        n = min(num_tokens - num_computed, budget)
        if n > 0:
            plan.append((request_id, n))
            budget -= n
    seats = max_num_seqs - len(running)
    i = 0
    while i < len(waiting) and budget > 0 and seats > 0:
        request_id, num_tokens, num_computed = waiting[i]
        want = num_tokens - num_computed
        if want > budget and not chunked:
            break
        take = want if want <= budget else budget
        plan.append((request_id, take))
        budget -= take
        seats -= 1
        i += 1
    return plan
