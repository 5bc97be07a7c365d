# Correct: a [0-9]+ full-match regular expression for the items, a set for the repeats, reconcile with early returns and re.sub(r"\s", ...), physical_id builds the visible list first and indexes after its own range check; own messages.
from __future__ import annotations

import re

CUDA_VAR = "CUDA_VISIBLE_DEVICES"
ASCEND_VAR = "ASCEND_RT_VISIBLE_DEVICES"
_ID = re.compile(r"[0-9]+")


class VisibleDevicesMismatchError(RuntimeError):
    pass


def parse_visible(value, total):
    result, seen = [], set()
    for raw in value.split(","):
        item = raw.strip()
        if _ID.fullmatch(item) is None:
            return result
        n = int(item)
        if n >= total or n in seen:
            return result
        seen.add(n)
        result.append(n)
    return result


def reconcile(env):
    has_cuda, has_ascend = CUDA_VAR in env, ASCEND_VAR in env
    if not has_cuda and not has_ascend:
        return
    if not has_ascend:
        env[ASCEND_VAR] = env[CUDA_VAR]
        return
    if not has_cuda:
        env[CUDA_VAR] = env[ASCEND_VAR]
        return
    a, b = env[CUDA_VAR], env[ASCEND_VAR]
    if re.sub(r"\s", "", a) != re.sub(r"\s", "", b):
        raise VisibleDevicesMismatchError(f"mismatch: {CUDA_VAR}={a} but {ASCEND_VAR}={b}")


def physical_id(logical, env, var, total):
    if var in env:
        visible = parse_visible(env[var], total)
    else:
        visible = list(range(total))
    if logical < 0 or logical >= len(visible):
        raise ValueError(f"logical id {logical} out of range [0, {len(visible)})")
    return visible[logical]
