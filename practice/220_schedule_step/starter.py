"""Exercise 220: one scheduling step under a token budget. Keep the names."""
from __future__ import annotations


def schedule_step(running: list[tuple[str, int, int]], waiting: list[tuple[str, int, int]], budget: int,
                  max_num_seqs: int, chunked: bool = True) -> list[tuple[str, int]]:
    plan: list[tuple[str, int]] = []
    # TODO 1: running requests in order, each min(remaining, budget); stop when the budget is 0
    # TODO 2: waiting requests FCFS while budget > 0 and fewer than max_num_seqs run;
    #         chunk the head when chunked, otherwise stop at the first one that does not fit
    raise NotImplementedError("schedule_step")
