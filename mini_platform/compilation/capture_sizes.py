"""Which batch sizes get a graph, and which graph a step replays (exercises 240, 244 and 248).

Pure Python: no torch. The model runner and the engine call these functions through this module's
attributes, so a learner's solutions can stand in for them (``python practice/judge.py engine``).
"""
from __future__ import annotations

import bisect
from typing import Sequence

from .config import CUDAGRAPH_MODES


def decode_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int,
                         user_sizes: list[int] | None = None) -> list[int]:
    """The batch sizes that get a full decode graph, ascending, without duplicates.

    ``user_sizes`` None: vLLM v0.11.0's default schedule ``[1, 2, 4] + range(8, N + 1, 8)`` with
    ``N = min(2 * max_num_seqs, 512)``, without sizes above ``max_num_batched_tokens``. Given sizes must be
    positive integers (ValueError otherwise, or when one exceeds ``max_num_batched_tokens``: that graph
    could never replay). Either way only sizes ``<= max_num_seqs`` stay: a decode step holds at most
    ``max_num_seqs`` requests of one token (vllm-ascend v0.11.0's ``_capture_model`` keeps the same for its
    full decode graphs); ValueError when none is left.
    """
    if user_sizes is None:
        n = min(2 * max_num_seqs, 512)
        sizes = [s for s in [1, 2, 4] + list(range(8, n + 1, 8)) if s <= max_num_batched_tokens]
    else:
        sizes = _checked_sizes(user_sizes, max_num_batched_tokens)
    decode = [s for s in sizes if s <= max_num_seqs]
    if not decode:
        raise ValueError(f"no capture size in {sizes} is at most max_num_seqs={max_num_seqs}: a decode step never "
                         "holds more requests; give a smaller size")
    return decode


def _checked_sizes(user_sizes: list[int], max_num_batched_tokens: int) -> list[int]:
    """Given capture sizes sorted and deduplicated; ValueError for anything but positive integers that a step fits."""
    if isinstance(user_sizes, (str, bytes)) or not isinstance(user_sizes, Sequence) or not user_sizes:
        raise ValueError(f"cudagraph_capture_sizes must be a non-empty list of positive integers, got "
                         f"{user_sizes!r} (or use enforce_eager=True)")
    bad = [s for s in user_sizes if not isinstance(s, int) or isinstance(s, bool) or s < 1]
    if bad:
        raise ValueError(f"cudagraph_capture_sizes must be positive integers; these are not: {bad[:5]}")
    if max(user_sizes) > max_num_batched_tokens:
        raise ValueError(f"cudagraph_capture_sizes has {max(user_sizes)}, more than max_num_batched_tokens="
                         f"{max_num_batched_tokens} (a step never holds more tokens, so that graph could never "
                         "replay); lower it or raise max_num_batched_tokens")
    return sorted(set(user_sizes))


def dispatch_graph(num_scheduled_tokens: list[int], capture_sizes: list[int]) -> int | None:
    """The capture size the step replays, or None: run it eagerly.

    ``num_scheduled_tokens`` has each request's new tokens in the step, ``capture_sizes`` is ascending. Only a
    uniform decode step (one token per request) replays, in the smallest graph that holds its requests;
    prefill, mixed steps and steps larger than every graph run eagerly. ValueError for an empty step or a
    count below 1.
    """
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"a step has at least one request and each has >= 1 token, got {list(num_scheduled_tokens)}")
    if any(n != 1 for n in num_scheduled_tokens):
        return None
    i = bisect.bisect_left(capture_sizes, len(num_scheduled_tokens))
    return capture_sizes[i] if i < len(capture_sizes) else None


def capture_size_schedule(max_num_batched_tokens: int, max_num_seqs: int,
                          user_sizes: list[int] | None = None) -> list[int]:
    """The token counts that get a piecewise graph, ascending: as :func:`decode_capture_sizes` (the same default
    schedule and the same checks of given sizes) without keeping only sizes ``<= max_num_seqs``: a piecewise graph
    serves any batch of that many tokens, prefill and mixed batches too (vLLM's ``cudagraph_capture_sizes``)."""
    if user_sizes is not None:
        return _checked_sizes(user_sizes, max_num_batched_tokens)
    n = min(2 * max_num_seqs, 512)
    return [s for s in [1, 2, 4] + list(range(8, n + 1, 8)) if s <= max_num_batched_tokens]


def dispatch_cudagraph(num_scheduled_tokens: list[int], cudagraph_mode: str, capture_sizes: list[int],
                       max_num_seqs: int) -> tuple[str, int | None]:
    """The runtime mode of a step and the token count it is padded to: ``("FULL", n)``, ``("PIECEWISE", n)`` or
    ``("NONE", None)`` (eager), as vLLM's ``CudagraphDispatcher.dispatch`` decides (exercise 248).

    The step's ``T`` tokens pad up to the smallest of the ascending ``capture_sizes`` ``>= T`` (none: eager). A
    uniform decode batch (every request has one token) replays a full graph when the mode's decode half is FULL
    and the padded size is at most ``max_num_seqs`` (full decode graphs exist only up to there); otherwise a batch
    replays what the mode's mixed half says (FULL or PIECEWISE; NONE: eager). ValueError for an empty step, a
    count below 1, or a mode not in ``config.CUDAGRAPH_MODES``.
    """
    if not num_scheduled_tokens or min(num_scheduled_tokens) < 1:
        raise ValueError(f"a step has at least one request and each has >= 1 token, got {list(num_scheduled_tokens)}")
    if cudagraph_mode not in CUDAGRAPH_MODES:
        raise ValueError(f"cudagraph_mode {cudagraph_mode!r} is not one of {list(CUDAGRAPH_MODES)}")
    decode_mode, mixed_mode = CUDAGRAPH_MODES[cudagraph_mode]
    i = bisect.bisect_left(capture_sizes, sum(num_scheduled_tokens))
    if i == len(capture_sizes):
        return "NONE", None
    size = capture_sizes[i]
    if decode_mode == "FULL" and size <= max_num_seqs and all(n == 1 for n in num_scheduled_tokens):
        return "FULL", size
    if mixed_mode == "NONE":
        return "NONE", None
    return mixed_mode, size
