# Mistake: Builds the result as [[0.0] * H] * T, so every token's row is the same list.
from __future__ import annotations


def ep_combine(order: list[int], returned: list[list[float]], topk_weights: list[list[float]]) -> list[list[float]]:
    num_tokens = len(topk_weights)
    top_k = len(topk_weights[0]) if num_tokens else 0
    if sorted(order) != list(range(num_tokens * top_k)):
        raise ValueError(f"order must be a permutation of 0..{num_tokens * top_k - 1}, got {order}")
    if len(returned) != len(order):
        raise ValueError(f"{len(returned)} rows came back for {len(order)} pairs")
    if num_tokens == 0:
        return []
    output_of = [None] * len(order)
    for row, pair in zip(returned, order):          # undo the sort: pair -> its output
        output_of[pair] = row
    dim = len(returned[0])
    out = [[0.0] * dim] * num_tokens
    for t in range(num_tokens):
        for k in range(top_k):
            w, row = topk_weights[t][k], output_of[t * top_k + k]
            for h in range(dim):
                out[t][h] += w * row[h]
    return out
