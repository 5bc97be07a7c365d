# Mistake: The learner thinks FULL mode replays only decode batches and runs mixed batches eagerly.
from __future__ import annotations

import bisect

GENERAL_GRAPHS = {"NONE": None, "PIECEWISE": "PIECEWISE", "FULL": None, "FULL_DECODE_ONLY": None,
                  "FULL_AND_PIECEWISE": "PIECEWISE"}
DECODE_GRAPHS = {"FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"}


def dispatch(num_scheduled_tokens: list[int], capture_sizes: list[int], cudagraph_mode: str,
             max_num_seqs: int) -> tuple[str, int]:
    if cudagraph_mode not in GENERAL_GRAPHS:
        raise ValueError(f"unknown cudagraph_mode {cudagraph_mode!r}; expected one of {sorted(GENERAL_GRAPHS)}")
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"every scheduled request needs >= 1 token, got {num_scheduled_tokens}")
    n = sum(num_scheduled_tokens)
    i = bisect.bisect_left(capture_sizes, n)
    if i == len(capture_sizes):
        return "NONE", n
    padded = capture_sizes[i]
    uniform_decode = all(t == 1 for t in num_scheduled_tokens)
    if uniform_decode and cudagraph_mode in DECODE_GRAPHS and padded <= max_num_seqs:
        return "FULL", padded
    general = GENERAL_GRAPHS[cudagraph_mode]
    return (general, padded) if general else ("NONE", n)
