# Correct: unexpected names computed before raising for missing ones (raised in the stated order), a defaultdict of lists sorted per file, and files grouped with itertools.groupby.
from __future__ import annotations

import itertools


class LoadPlanError(ValueError):
    """Checkpoint and model do not match."""


def _expand(param, rows, packed):
    bits = param.split(".")
    if len(bits) >= 2 and bits[-2] in packed:
        parts = packed[bits[-2]]
        total = sum(size for _, size in parts)
        if total != rows:
            raise ValueError(f"{param}: stacked parts have {total} rows, expected {rows}")
        starts = list(itertools.accumulate([0] + [size for _, size in parts]))
        for (part, _), start, stop in zip(parts, starts, starts[1:]):
            yield ".".join(bits[:-2] + [part, bits[-1]]), start, stop
    else:
        yield param, 0, rows


def plan_loading(weight_map, params, packed, ignore_suffixes=()):
    needed = {}
    for param in sorted(params):
        for source, start, stop in _expand(param, params[param], packed):
            needed[source] = (source, param, start, stop)
    missing = sorted(needed.keys() - weight_map.keys())
    suffixes = tuple(ignore_suffixes)
    unexpected = sorted(n for n in weight_map.keys() - needed.keys() if not (suffixes and n.endswith(suffixes)))
    if missing:
        raise LoadPlanError(f"{len(missing)} missing: {missing}")
    if unexpected:
        raise LoadPlanError(f"{len(unexpected)} unexpected: {unexpected}")
    rows = sorted(needed.values(), key=lambda e: (weight_map[e[0]], e[0]))
    return {file: list(group) for file, group in itertools.groupby(rows, key=lambda e: weight_map[e[0]])}
