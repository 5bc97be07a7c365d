# Mistake: Leaves tensors with an ignorable suffix out of the plan even when a parameter needs them.
"""Exercise 202 (reference): plan how a sharded checkpoint fills the engine's parameters."""
from __future__ import annotations


class LoadPlanError(ValueError):
    """The checkpoint lacks tensors the model needs, or has tensors no parameter takes."""


def _sources(name: str, rows: int, packed: dict[str, list[tuple[str, int]]]) -> list[tuple[str, int, int]]:
    """The checkpoint tensors that fill parameter `name`: (checkpoint name, start, stop)."""
    parts = name.split(".")
    if len(parts) < 2 or parts[-2] not in packed:   # a name without a dot has no module component
        return [(name, 0, rows)]
    prefix, module, leaf = parts[:-2], parts[-2], parts[-1]
    out, start = [], 0
    for part, size in packed[module]:
        out.append((".".join([*prefix, part, leaf]), start, start + size))
        start += size
    if start != rows:
        raise ValueError(f"parameter {name} has {rows} rows but its parts {packed[module]} add up to {start}")
    return out


def plan_loading(weight_map: dict[str, str], params: dict[str, int], packed: dict[str, list[tuple[str, int]]],
                 ignore_suffixes: tuple[str, ...] = ()) -> dict[str, list[tuple[str, str, int, int]]]:
    """{file: [(checkpoint name, parameter name, start row, stop row), ...]}, files and entries sorted."""
    needed = {src: (param, start, stop) for param, rows in params.items()
              for src, start, stop in _sources(param, rows, packed)}
    missing = sorted(set(needed) - set(weight_map))
    if missing:
        raise LoadPlanError(f"missing checkpoint tensor(s): {', '.join(missing)}")
    unexpected = sorted(n for n in weight_map if n not in needed and not n.endswith(tuple(ignore_suffixes)))
    if unexpected:
        raise LoadPlanError(f"unexpected checkpoint tensor(s): {', '.join(unexpected)}")
    plan: dict[str, list[tuple[str, str, int, int]]] = {}
    for src in sorted(n for n in needed if not n.endswith(tuple(ignore_suffixes))):
        plan.setdefault(weight_map[src], []).append((src, *needed[src]))
    return dict(sorted(plan.items()))
