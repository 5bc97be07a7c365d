# Correct: Finds the size with a linear scan and spells the five modes out as if-branches instead of a table.
from __future__ import annotations


def dispatch_cudagraph(num_scheduled_tokens, cudagraph_mode, capture_sizes, max_num_seqs):
    if len(num_scheduled_tokens) == 0 or any(n < 1 for n in num_scheduled_tokens):
        raise ValueError("a step needs requests of at least one token each")
    if cudagraph_mode not in ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"):
        raise ValueError(f"{cudagraph_mode} is not a cudagraph mode")
    total = sum(num_scheduled_tokens)
    size = next((s for s in capture_sizes if s >= total), None)
    if size is None or cudagraph_mode == "NONE":
        return "NONE", None
    uniform = total == len(num_scheduled_tokens)
    if cudagraph_mode != "PIECEWISE" and uniform and size <= max_num_seqs:
        return "FULL", size
    if cudagraph_mode == "FULL":
        return "FULL", size
    if cudagraph_mode == "FULL_DECODE_ONLY":
        return "NONE", None
    return "PIECEWISE", size
