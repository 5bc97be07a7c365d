"""Exercise 230: softmax top-k routing with renormalisation and a fixed tie rule. Keep the names."""
from __future__ import annotations

import math


def topk_softmax(logits: list[list[float]], k: int,
                 renormalize: bool) -> tuple[list[list[float]], list[list[int]]]:
    """Per row: stable softmax, the k largest probabilities (ties: lower expert first), optional renormalisation."""
    weights: list[list[float]] = []
    ids: list[list[int]] = []
    # TODO: validate k and the rows
    # TODO: for each row: subtract the max, exp, divide by the sum
    # TODO: order experts by (-probability, expert), keep k, renormalise if asked
    raise NotImplementedError("topk_softmax")
