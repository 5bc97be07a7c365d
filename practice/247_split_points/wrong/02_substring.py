# Mistake: Matches splitting ops by substring, so any op whose name contains an attention op's name splits too.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    ids, current = [], 0
    for op in node_ops:
        if any(s in op for s in splitting_ops):
            ids.append(current + 1)
            current += 2
        else:
            ids.append(current)
    return ids
