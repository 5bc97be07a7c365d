"""Exercise 191: the visible-devices rule, reconciling CUDA and Ascend variables, logical -> physical ids.

Fill in the TODOs. Keep the names: the tests import them.
"""
from __future__ import annotations

from typing import Mapping, MutableMapping

CUDA_VAR = "CUDA_VISIBLE_DEVICES"
ASCEND_VAR = "ASCEND_RT_VISIBLE_DEVICES"


class VisibleDevicesMismatchError(RuntimeError):
    """Both variables are set and select different devices."""


def parse_visible(value: str, total: int) -> list[int]:
    """Ids listed in `value`, stopping at the first invalid item (not a decimal int >= 0, >= total, repeated)."""
    # TODO
    raise NotImplementedError("parse_visible")


def reconcile(env: MutableMapping[str, str]) -> None:
    """Both set and different (spaces ignored) -> VisibleDevicesMismatchError; one set -> copy it to the other."""
    # TODO
    raise NotImplementedError("reconcile")


def physical_id(logical: int, env: Mapping[str, str], var: str, total: int) -> int:
    """Physical id of logical device `logical` given `env[var]` (unset: all `total` devices); ValueError if out of range."""
    # TODO
    raise NotImplementedError("physical_id")
