# Correct: Builds the ids with itertools.accumulate over the splitting flags instead of a loop with a counter.
from __future__ import annotations

import itertools


def piece_ids(node_ops, splitting_ops):
    flags = [op in splitting_ops for op in node_ops]
    before = list(itertools.accumulate(flags, initial=0))[:-1]   # splitting ops strictly before each node
    return [2 * k + 1 if f else 2 * k for k, f in zip(before, flags)]
