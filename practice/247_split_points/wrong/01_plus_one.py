# Mistake: Advances the id by one at a splitting op, so the op and the nodes after it share one sub-graph.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    ids, current = [], 0
    for op in node_ops:
        if op in splitting_ops:
            current += 1
        ids.append(current)
    return ids
