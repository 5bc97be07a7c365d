"""Exercise 248: the runtime mode and padded size of a step, by cudagraph_mode. Keep the name."""
from __future__ import annotations

import bisect  # noqa: F401  (the lookup should use it)

# mode -> (mode of a uniform decode batch, mode of any other batch)
MODES = {
    "NONE": ("NONE", "NONE"),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
    "FULL": ("FULL", "FULL"),
    "FULL_DECODE_ONLY": ("FULL", "NONE"),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE"),
}


def dispatch_cudagraph(num_scheduled_tokens: list[int], cudagraph_mode: str, capture_sizes: list[int],
                       max_num_seqs: int) -> tuple[str, int | None]:
    # TODO 1: ValueError for an empty step, a count below 1, or an unknown mode (name it)
    # TODO 2: pad the token total up to the smallest size >= it; none: ("NONE", None)
    # TODO 3: uniform decode + decode half FULL + size <= max_num_seqs: ("FULL", size)
    # TODO 4: else the other half: FULL / PIECEWISE with the size, NONE with None
    raise NotImplementedError("dispatch_cudagraph")
