"""Exercise 244: which graph a step may replay. Keep the names."""
from __future__ import annotations

import bisect  # noqa: F401


def dispatch(num_scheduled_tokens: list[int], capture_sizes: list[int], cudagraph_mode: str,
             max_num_seqs: int) -> tuple[str, int]:
    # TODO 1: validate the mode and the token counts
    # TODO 2: pad the total up to a capture size (eager and unpadded when it is too big)
    # TODO 3: a uniform decode batch may use a full decode graph (sizes <= max_num_seqs, two modes only);
    #         otherwise the general graphs of the mode: FULL, PIECEWISE or none
    raise NotImplementedError("dispatch")
