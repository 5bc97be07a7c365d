# Correct: checks digits character by character against "0123456789", reads the items with a while loop and an index, compares the two variables after dropping every isspace() character, raises the range error before parsing when logical is negative.
from __future__ import annotations

CUDA_VAR = "CUDA_VISIBLE_DEVICES"
ASCEND_VAR = "ASCEND_RT_VISIBLE_DEVICES"


class VisibleDevicesMismatchError(RuntimeError):
    """The two visible-devices variables disagree."""


def parse_visible(value, total):
    items = value.split(",")
    ids = []
    i = 0
    while i < len(items):
        item = items[i].strip()
        if item == "" or any(ch not in "0123456789" for ch in item):
            break
        device = int(item)
        if device >= total or device in ids:
            break
        ids.append(device)
        i += 1
    return ids


def _squash(text):
    return "".join(ch for ch in text if not ch.isspace())


def reconcile(env):
    cuda = env.get(CUDA_VAR)
    ascend = env.get(ASCEND_VAR)
    if cuda is None and ascend is None:
        return
    if cuda is None:
        env[CUDA_VAR] = ascend
    elif ascend is None:
        env[ASCEND_VAR] = cuda
    elif _squash(cuda) != _squash(ascend):
        raise VisibleDevicesMismatchError(
            "the variables disagree: %s=%r, %s=%r" % (CUDA_VAR, cuda, ASCEND_VAR, ascend))


def physical_id(logical, env, var, total):
    value = env.get(var)
    visible = list(range(total)) if value is None else parse_visible(value, total)
    if logical < 0:
        raise ValueError(f"logical device {logical} is negative; {len(visible)} visible")
    try:
        return visible[logical]
    except IndexError:
        raise ValueError(f"logical device {logical} >= {len(visible)} visible devices") from None
