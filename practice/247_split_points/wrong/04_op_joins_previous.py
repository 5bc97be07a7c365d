# Mistake: Keeps the splitting op in the piece before it and only starts a new piece after it.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    ids, current = [], 0
    for op in node_ops:
        ids.append(current)
        if op in splitting_ops:
            current += 2
    return ids
