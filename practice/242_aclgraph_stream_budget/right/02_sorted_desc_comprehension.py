# Correct: Counts the groups with sum() over a tuple, keeps sizes[-1] for one graph, and builds the indices with the pins inside the comprehension.
from __future__ import annotations

import math


def max_graph_sizes(num_hidden_layers: int, tensor_parallel_size: int = 1, data_parallel_size: int = 1) -> int:
    groups = sum(1 for p in (tensor_parallel_size, data_parallel_size) if p > 1)
    return math.floor((1800 - 40 * groups) / (num_hidden_layers + 1) / (1 + 2 * groups))


def limit_capture_sizes(sizes: list[int], num_hidden_layers: int, tensor_parallel_size: int = 1,
                        data_parallel_size: int = 1) -> list[int]:
    m = max_graph_sizes(num_hidden_layers, tensor_parallel_size, data_parallel_size)
    if m < 1:
        raise ValueError("no ACL graph fits the stream budget")
    n = len(sizes)
    if n <= m:
        return [s for s in sizes]
    if m == 1:
        return [sizes[-1]]
    desc = sorted(sizes, reverse=True)
    step = (n - 1) / (m - 1)
    idx = [0 if i == 0 else n - 1 if i == m - 1 else round(i * step) for i in range(m)]
    return sorted(desc[i] for i in idx)
