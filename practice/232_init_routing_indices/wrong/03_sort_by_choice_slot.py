# Mistake: Orders rows of one expert by choice slot then token (sorting the column-major flattening) instead of by token.
from __future__ import annotations


def _flatten(topk_ids: list[list[int]]) -> tuple[list[int], int, int]:
    """Row-major flattening, with N and K; checks that all rows have K entries."""
    n = len(topk_ids)
    k = len(topk_ids[0]) if topk_ids else 0
    if any(len(row) != k for row in topk_ids):
        raise ValueError("every row of topk_ids must hold the same number of choices")
    return [e for row in topk_ids for e in row], n, k


def init_routing_v1(topk_ids: list[list[int]]) -> tuple[list[int], list[int], list[int]]:
    flat, n, k = _flatten(topk_ids)
    if any(e < 0 for e in flat):
        raise ValueError("expert ids must be >= 0")
    row_idx = [j * n + t for t in range(n) for j in range(k)]        # row_idx[t][j], flattened row by row
    order = sorted(range(n * k), key=lambda i: (flat[i], i % k, i // k))
    src = [row_idx[i] for i in order]
    expanded_row_idx = [0] * (n * k)
    for d, s in enumerate(src):
        expanded_row_idx[s] = d
    return [s % n for s in src], expanded_row_idx, [flat[i] for i in order]


def init_routing_v2(topk_ids: list[list[int]], num_experts: int,
                    active_expert_range: list[int] | None = None) -> tuple[list[int], list[int], list[int]]:
    flat, n, k = _flatten(topk_ids)
    if any(not 0 <= e < num_experts for e in flat):
        raise ValueError(f"expert ids must lie in [0, {num_experts})")
    start, end = active_expert_range if active_expert_range is not None else (0, num_experts)
    if not 0 <= start < end <= num_experts:
        raise ValueError(f"active_expert_range must satisfy 0 <= start < end <= {num_experts}, got {[start, end]}")
    order = sorted((i for i in range(n * k) if start <= flat[i] < end), key=lambda i: flat[i])
    expanded_row_idx = [-1] * (n * k)
    for d, i in enumerate(order):
        expanded_row_idx[i] = d
    counts = [0] * (end - start)
    for i in order:
        counts[flat[i] - start] += 1
    return [i // k for i in order], expanded_row_idx, counts
