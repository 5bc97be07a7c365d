# Mistake: Lets adjacent splitting ops share one id (opens a new id only after an ordinary node).
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    ids, current, previous_split = [], 0, False
    for op in node_ops:
        if op in splitting_ops:
            if not previous_split:
                current += 1
            ids.append(current)
            previous_split = True
        else:
            if previous_split:
                current += 1
            ids.append(current)
            previous_split = False
    return ids
