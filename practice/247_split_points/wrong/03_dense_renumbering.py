# Mistake: Renumbers the sub-graphs densely (0, 1, 2, ...), so empty pieces do not keep their skipped ids.
from __future__ import annotations


def piece_ids(node_ops, splitting_ops):
    raw, current = [], 0
    for op in node_ops:
        if op in splitting_ops:
            raw.append(current + 1)
            current += 2
        else:
            raw.append(current)
    dense = {v: i for i, v in enumerate(sorted(set(raw)))}
    return [dense[v] for v in raw]
