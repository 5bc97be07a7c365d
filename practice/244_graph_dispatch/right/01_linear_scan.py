# Correct: Checks the counts in a loop, tells uniform decode by sum == len, and finds the size with a linear scan instead of bisect.
from __future__ import annotations


def dispatch_graph(num_scheduled_tokens, capture_sizes):
    if len(num_scheduled_tokens) == 0:
        raise ValueError("the step has no request")
    for n in num_scheduled_tokens:
        if n < 1:
            raise ValueError(f"request with {n} tokens")
    batch = len(num_scheduled_tokens)
    if sum(num_scheduled_tokens) != batch:
        return None
    for size in capture_sizes:
        if size >= batch:
            return size
    return None
