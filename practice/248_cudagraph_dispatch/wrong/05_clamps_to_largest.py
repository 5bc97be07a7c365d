# Mistake: Falls back to the largest graph when the step is larger than every size, which cannot hold it.
from __future__ import annotations

import bisect

MODES = {"NONE": ("NONE", "NONE"), "PIECEWISE": ("PIECEWISE", "PIECEWISE"), "FULL": ("FULL", "FULL"),
         "FULL_DECODE_ONLY": ("FULL", "NONE"), "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE")}

def dispatch_cudagraph(num_scheduled_tokens, cudagraph_mode, capture_sizes, max_num_seqs):
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError("bad step")
    if cudagraph_mode not in MODES:
        raise ValueError(f"unknown cudagraph_mode {cudagraph_mode!r}")
    decode_mode, mixed_mode = MODES[cudagraph_mode]
    if not capture_sizes:
        return "NONE", None
    i = min(bisect.bisect_left(capture_sizes, sum(num_scheduled_tokens)), len(capture_sizes) - 1)
    size = capture_sizes[i]
    if decode_mode == "FULL" and size <= max_num_seqs and all(n == 1 for n in num_scheduled_tokens):
        return "FULL", size
    return ("NONE", None) if mixed_mode == "NONE" else (mixed_mode, size)
