# Correct: splits names with rpartition, builds the needed table with plain loops, checks ignore_suffixes with any(), and sorts the (file, tensor) pairs once at the end; its own messages (newline-separated lists).
from __future__ import annotations


class LoadPlanError(ValueError):
    pass


def plan_loading(weight_map, params, packed, ignore_suffixes=()):
    needed = {}
    for param, rows in params.items():
        head, dot, leaf = param.rpartition(".")
        prefix, _, module = head.rpartition(".")
        if dot and module in packed:
            offset = 0
            for part, size in packed[module]:
                source = f"{prefix}.{part}.{leaf}" if prefix else f"{part}.{leaf}"
                needed[source] = (param, offset, offset + size)
                offset += size
            if offset != rows:
                raise LoadPlanError(f"rows of {param}: parts give {offset}, the parameter has {rows}")
        else:
            needed[param] = (param, 0, rows)
    missing = [name for name in needed if name not in weight_map]
    if missing:
        raise LoadPlanError("checkpoint is missing:\n" + "\n".join(sorted(missing)))
    unexpected = []
    for name in weight_map:
        if name in needed or any(name.endswith(s) for s in ignore_suffixes):
            continue
        unexpected.append(name)
    if unexpected:
        raise LoadPlanError("checkpoint has unexpected tensors:\n" + "\n".join(sorted(unexpected)))
    plan = {}
    for file, source in sorted((weight_map[s], s) for s in needed):
        plan.setdefault(file, []).append((source,) + needed[source])
    return plan
