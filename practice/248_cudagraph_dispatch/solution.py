"""Exercise 248: the runtime mode and padded size of a step, by cudagraph_mode (solution)."""
from __future__ import annotations

import bisect

MODES = {
    "NONE": ("NONE", "NONE"),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
    "FULL": ("FULL", "FULL"),
    "FULL_DECODE_ONLY": ("FULL", "NONE"),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE"),
}


def dispatch_cudagraph(num_scheduled_tokens: list[int], cudagraph_mode: str, capture_sizes: list[int],
                       max_num_seqs: int) -> tuple[str, int | None]:
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"a step has at least one request of >= 1 token, got {num_scheduled_tokens}")
    if cudagraph_mode not in MODES:
        raise ValueError(f"unknown cudagraph_mode {cudagraph_mode!r}; use one of {list(MODES)}")
    decode_mode, mixed_mode = MODES[cudagraph_mode]
    i = bisect.bisect_left(capture_sizes, sum(num_scheduled_tokens))
    if i == len(capture_sizes):
        return "NONE", None
    size = capture_sizes[i]
    if decode_mode == "FULL" and size <= max_num_seqs and all(n == 1 for n in num_scheduled_tokens):
        return "FULL", size
    if mixed_mode == "NONE":
        return "NONE", None
    return mixed_mode, size
