"""Exercise 247: which sub-graph each node of the traced model falls in (solution)."""
from __future__ import annotations

from typing import Collection


def piece_ids(node_ops: list[str], splitting_ops: Collection[str]) -> list[int]:
    ids, current = [], 0
    for op in node_ops:
        if op in splitting_ops:
            ids.append(current + 1)
            current += 2
        else:
            ids.append(current)
    return ids
