"""The forward context: what the code outside the compiled graph needs during one forward (vLLM's
``vllm/forward_context.py``: ``set_forward_context`` / ``get_forward_context``).

A compiled model's graph holds tensors only. Attention, run eagerly between the piecewise graphs, needs the step's
attention metadata and the KV caches, and each piece's graph wrapper needs to know whether this step replays it
(the runtime mode the dispatcher chose) and at which size: the model runner sets them here around the forward.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass
class ForwardContext:
    """``attention``: the runner's :class:`~mini_platform.model.paged_attention.PagedAttention`, its metadata set for
    the step; ``num_tokens``: the rows the model runs (the step padded to a capture size); ``num_actual_tokens``: the
    step's real tokens, the first rows; ``runtime_mode``: ``"NONE"``, ``"PIECEWISE"`` or ``"FULL"``; ``capturing``:
    the model runner's capture phase, the only time a piece may capture a graph (vLLM's
    ``set_cudagraph_capturing_enabled``)."""
    attention: Any
    num_tokens: int
    num_actual_tokens: int
    runtime_mode: str = "NONE"
    capturing: bool = False


_context: ForwardContext | None = None


def get_forward_context() -> ForwardContext:
    """The context of the forward under way; RuntimeError outside one."""
    if _context is None:
        raise RuntimeError("no forward context: the model runner sets one around each forward (set_forward_context)")
    return _context


@contextlib.contextmanager
def set_forward_context(context: ForwardContext) -> Iterator[ForwardContext]:
    global _context
    previous, _context = _context, context
    try:
        yield context
    finally:
        _context = previous
