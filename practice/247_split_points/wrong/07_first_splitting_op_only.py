# Mistake: Compares with the first splitting op only, so a second kind (the MLA op) never splits.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    first = next(iter(splitting_ops), None)
    ids, current = [], 0
    for op in node_ops:
        if op == first:
            ids.append(current + 1)
            current += 2
        else:
            ids.append(current)
    return ids
