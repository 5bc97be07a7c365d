# Mistake: Rounds the budget to the nearest integer instead of taking the floor.
from __future__ import annotations

import math

STREAM_BUDGET = 1800


def max_graph_sizes(num_hidden_layers: int, tensor_parallel_size: int = 1, data_parallel_size: int = 1) -> int:
    groups = (tensor_parallel_size > 1) + (data_parallel_size > 1)
    return round((STREAM_BUDGET - 40 * groups) / (num_hidden_layers + 1) / (1 + 2 * groups))


def limit_capture_sizes(sizes: list[int], num_hidden_layers: int, tensor_parallel_size: int = 1,
                        data_parallel_size: int = 1) -> list[int]:
    limit = max_graph_sizes(num_hidden_layers, tensor_parallel_size, data_parallel_size)
    n = len(sizes)
    if limit < 1:
        raise ValueError(f"the stream budget allows no graph for {num_hidden_layers} layers; run eagerly")
    if limit >= n:
        return list(sizes)
    if limit == 1:
        return [max(sizes)]
    largest_first = sorted(sizes, reverse=True)
    step = (n - 1) / (limit - 1)
    indices = [round(i * step) for i in range(limit)]
    indices[0], indices[-1] = 0, n - 1
    return sorted(largest_first[i] for i in indices)
