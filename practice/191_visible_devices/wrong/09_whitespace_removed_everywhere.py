# Mistake: Removes all whitespace from the value before splitting, so an item like '1 2' reads as 12 instead of stopping there.
"""Exercise 191 (a wrong solution): the visible-devices rule, reconciling two variables, logical -> physical ids."""
from __future__ import annotations

from typing import Mapping, MutableMapping

CUDA_VAR = "CUDA_VISIBLE_DEVICES"
ASCEND_VAR = "ASCEND_RT_VISIBLE_DEVICES"


class VisibleDevicesMismatchError(RuntimeError):
    """Both variables are set and select different devices."""


def parse_visible(value: str, total: int) -> list[int]:
    """Ids listed in `value`, stopping at the first invalid item (not a decimal int >= 0, >= total, repeated)."""
    ids: list[int] = []
    for item in "".join(value.split()).split(","):
        if not (item.isascii() and item.isdigit()):
            break
        device = int(item)
        if device >= total or device in ids:
            break
        ids.append(device)
    return ids


def reconcile(env: MutableMapping[str, str]) -> None:
    """Both set and different (whitespace ignored) -> VisibleDevicesMismatchError; one set -> copy it to the other."""
    cuda, ascend = env.get(CUDA_VAR), env.get(ASCEND_VAR)
    if cuda is not None and ascend is not None:
        if "".join(cuda.split()) != "".join(ascend.split()):
            raise VisibleDevicesMismatchError(
                f"{CUDA_VAR}={cuda!r} and {ASCEND_VAR}={ascend!r} select different devices; unset one or make them equal")
    elif cuda is not None:
        env[ASCEND_VAR] = cuda
    elif ascend is not None:
        env[CUDA_VAR] = ascend


def physical_id(logical: int, env: Mapping[str, str], var: str, total: int) -> int:
    """Physical id of logical device `logical` given `env[var]` (unset: all `total` devices); ValueError if out of range."""
    visible = list(range(total)) if var not in env else parse_visible(env[var], total)
    if not 0 <= logical < len(visible):
        raise ValueError(f"logical device {logical} does not exist: {len(visible)} device(s) visible through {var}")
    return visible[logical]
