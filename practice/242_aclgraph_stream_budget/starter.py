"""Exercise 242: the ACL-graph stream budget. Keep the names."""
from __future__ import annotations

import math  # noqa: F401

STREAM_BUDGET = 1800


def max_graph_sizes(num_hidden_layers: int, tensor_parallel_size: int = 1, data_parallel_size: int = 1) -> int:
    # TODO 1: g = number of communication groups; floor((1800 - 40 g) / (layers + 1) / (1 + 2 g))
    raise NotImplementedError("max_graph_sizes")


def limit_capture_sizes(sizes: list[int], num_hidden_layers: int, tensor_parallel_size: int = 1,
                        data_parallel_size: int = 1) -> list[int]:
    # TODO 2: ValueError below 1 (checked first, even for no sizes); unchanged (a new list) when they fit;
    #         only the largest for 1; otherwise sample the largest-first list at round(i * step),
    #         pinning the first and last index; return ascending
    raise NotImplementedError("limit_capture_sizes")
