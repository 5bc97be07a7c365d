# Mistake: Starts numbering at the first node, so a leading splitting op gets 0 instead of skipping the empty piece 0.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    ids, current = [], -1
    for i, op in enumerate(node_ops):
        if op in splitting_ops:
            ids.append(current + 1)
            current += 2
        else:
            if i == 0:
                current = 0
            ids.append(current)
    return ids
