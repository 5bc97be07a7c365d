# Mistake: Tests the variables with truthiness in the mismatch check, so an empty value next to a non-empty one is neither compared nor copied: no error although the two disagree.
from __future__ import annotations

CUDA_VAR = "CUDA_VISIBLE_DEVICES"
ASCEND_VAR = "ASCEND_RT_VISIBLE_DEVICES"


class VisibleDevicesMismatchError(RuntimeError):
    """Both variables are set and select different devices."""


def parse_visible(value, total):
    ids = []
    for item in value.split(","):
        item = item.strip()
        if not (item.isascii() and item.isdigit()):
            break
        device = int(item)
        if device >= total or device in ids:
            break
        ids.append(device)
    return ids


def reconcile(env):
    cuda, ascend = env.get(CUDA_VAR), env.get(ASCEND_VAR)
    if cuda and ascend:
        if "".join(cuda.split()) != "".join(ascend.split()):
            raise VisibleDevicesMismatchError(f"{CUDA_VAR}={cuda!r} and {ASCEND_VAR}={ascend!r} differ")
    elif ascend is None and cuda is not None:
        env[ASCEND_VAR] = cuda
    elif cuda is None and ascend is not None:
        env[CUDA_VAR] = ascend


def physical_id(logical, env, var, total):
    visible = list(range(total)) if var not in env else parse_visible(env[var], total)
    if not 0 <= logical < len(visible):
        raise ValueError(f"logical device {logical} does not exist: {len(visible)} device(s) visible")
    return visible[logical]
