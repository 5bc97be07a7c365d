# Correct: Builds vLLM-style key sets (FULL and PIECEWISE keys of (size, uniform)) and looks the step's key up in them.
from __future__ import annotations

import bisect

HALVES = {"NONE": ("NONE", "NONE"), "PIECEWISE": ("PIECEWISE", "PIECEWISE"), "FULL": ("FULL", "FULL"),
          "FULL_DECODE_ONLY": ("FULL", "NONE"), "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE")}


def dispatch_cudagraph(num_scheduled_tokens, cudagraph_mode, capture_sizes, max_num_seqs):
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"bad step {num_scheduled_tokens}")
    try:
        decode, mixed = HALVES[cudagraph_mode]
    except KeyError:
        raise ValueError(f"cudagraph_mode {cudagraph_mode!r} is unknown") from None
    keys = {"FULL": set(), "PIECEWISE": set()}
    for s in capture_sizes:
        if mixed != "NONE":
            keys[mixed].add((s, False))
        if decode == "FULL" and s <= max_num_seqs:
            keys["FULL"].add((s, True))
    i = bisect.bisect_left(capture_sizes, sum(num_scheduled_tokens))
    if i == len(capture_sizes):
        return "NONE", None
    key = (capture_sizes[i], all(n == 1 for n in num_scheduled_tokens))
    general = (key[0], False)
    for mode, k in (("FULL", key), ("FULL", general), ("PIECEWISE", general)):
        if k in keys[mode]:
            return mode, k[0]
    return "NONE", None
