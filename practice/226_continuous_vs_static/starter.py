"""Exercise 226: continuous vs static batching, counted in steps. Keep the names."""
from __future__ import annotations


def static_steps(output_lens: list[int], batch_size: int) -> int:
    # TODO: each group of batch_size runs as long as its longest request
    raise NotImplementedError("static_steps")


def continuous_steps(output_lens: list[int], batch_size: int) -> int:
    # TODO: simulate: fill free slots from the queue, every request makes one token, finished ones leave
    raise NotImplementedError("continuous_steps")
