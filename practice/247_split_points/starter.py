"""Exercise 247: which sub-graph each node of the traced model falls in. Keep the name."""
from __future__ import annotations

from typing import Collection


def piece_ids(node_ops: list[str], splitting_ops: Collection[str]) -> list[int]:
    # TODO 1: the current id starts at 0; an ordinary node gets the current id
    # TODO 2: a splitting op (exact name) gets current + 1; the nodes after it get current + 2
    # TODO 3: ids of empty pieces are skipped, never renumbered
    raise NotImplementedError("piece_ids")
