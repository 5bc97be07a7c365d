"""Exercise 220: one scheduling step under a token budget. Keep the names."""
from __future__ import annotations

Request = tuple[str, int, int]  # (request_id, num_tokens, num_computed)


def schedule_step(running: list[Request], waiting: list[Request], budget: int, max_num_seqs: int,
                  chunked: bool = True) -> list[tuple[str, int]]:
    plan: list[tuple[str, int]] = []
    # TODO 1: running requests in order, each min(remaining, budget); stop when the budget is 0
    # TODO 2: waiting requests FCFS while budget > 0 and fewer than max_num_seqs run;
    #         chunk the head when chunked, otherwise stop at the first one that does not fit
    raise NotImplementedError("schedule_step")
