# Correct: Computes the budget with integer floor division and samples with an explicit loop, keeping the largest-first indices in a set-free list.
from __future__ import annotations


def max_graph_sizes(num_hidden_layers, tensor_parallel_size=1, data_parallel_size=1):
    g = 0
    if tensor_parallel_size > 1:
        g += 1
    if data_parallel_size > 1:
        g += 1
    return (1800 - 40 * g) // ((num_hidden_layers + 1) * (1 + 2 * g))


def limit_capture_sizes(sizes, num_hidden_layers, tensor_parallel_size=1, data_parallel_size=1):
    m = max_graph_sizes(num_hidden_layers, tensor_parallel_size, data_parallel_size)
    if m <= 0:
        raise ValueError(f"budget of {m} graphs: capture nothing, run eagerly")
    if len(sizes) <= m:
        return sizes[:]
    if m == 1:
        return [sizes[-1]]
    desc = sizes[::-1]
    step = (len(desc) - 1) / (m - 1)
    picked = []
    for i in range(m):
        if i == 0:
            j = 0
        elif i == m - 1:
            j = len(desc) - 1
        else:
            j = round(i * step)
        picked.append(desc[j])
    picked.reverse()
    return picked
