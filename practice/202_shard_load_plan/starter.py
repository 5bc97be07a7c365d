"""Exercise 202: plan how a sharded checkpoint fills the engine's (partly merged) parameters.

Fill in the TODO. Standard library only.
"""
from __future__ import annotations


class LoadPlanError(ValueError):
    """The checkpoint lacks tensors the model needs, or has tensors no parameter takes."""


def plan_loading(weight_map: dict[str, str], params: dict[str, int], packed: dict[str, list[tuple[str, int]]],
                 ignore_suffixes: tuple[str, ...] = ()) -> dict[str, list[tuple[str, str, int, int]]]:
    """{file: [(checkpoint name, parameter name, start row, stop row), ...]}, files and entries sorted.

    A parameter whose module (second-to-last dotted component) is in `packed` is stacked from its
    parts in order. Missing names -> LoadPlanError listing all; then unexpected names -> LoadPlanError
    (a name ending with one of ignore_suffixes is not unexpected; if a parameter needs it, it is loaded).
    """
    raise NotImplementedError("TODO: implement plan_loading")
