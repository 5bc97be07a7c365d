# Correct: Counts the splitting ops seen so far: an op's id is 2k + 1 for the k-th splitting op, an ordinary node's 2k.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    names, seen, ids = set(splitting_ops), 0, []
    for op in node_ops:
        if op in names:
            ids.append(2 * seen + 1)
            seen += 1
        else:
            ids.append(2 * seen)
    return ids
