"""Exercise 251: a ring all-reduce simulated step by step. Keep the names."""
from __future__ import annotations


def ring_all_reduce(buffers: list[list[float]]) -> list[list[list[float]]]:
    """history[0] = a copy of buffers, history[k] = every rank's vector after step k (2 (N-1) steps)."""
    # TODO: validate; cut each vector into N chunks (the first L % N one longer)
    # TODO: N-1 reduce-scatter steps (rank r sends chunk (r - s) % N, the receiver adds)
    # TODO: N-1 all-gather steps (rank r sends chunk (r + 1 - s) % N, the receiver overwrites)
    # TODO: all sends of a step use the content at the start of the step; snapshot after each step
    raise NotImplementedError("ring_all_reduce")
