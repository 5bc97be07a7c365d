"""Exercise 258: the combine of an expert-parallel exchange, a weighted sum per token. Keep the names."""
from __future__ import annotations


def ep_combine(order: list[int], returned: list[list[float]], topk_weights: list[list[float]]) -> list[list[float]]:
    """Row t = sum over k of topk_weights[t][k] * the output of pair t*K+k (returned[i] belongs to order[i])."""
    # TODO: validate order and the number of rows
    # TODO: undo the sort (pair -> output), then the weighted sum per token
    raise NotImplementedError("ep_combine")
