"""The Lumen runtime's device module (the role ``torch.npu`` plays for Ascend).

Importing it starts the runtime, so the detector never imports it. The device is the CPU underneath:
work runs synchronously and there is no device cache to empty.
"""
from __future__ import annotations

import os

from . import device_count as _device_nodes

VISIBLE_DEVICES_ENV = "LUMEN_VISIBLE_DEVICES"
_current = 0


def _visible() -> list[int]:
    raw = os.environ.get(VISIBLE_DEVICES_ENV)
    nodes = list(range(_device_nodes()))
    if raw is None:
        return nodes
    return [int(item) for item in raw.split(",") if item.strip() and int(item) in nodes]


def device_count() -> int:
    """Devices this process may use: the nodes, filtered by LUMEN_VISIBLE_DEVICES when it is set."""
    return len(_visible())


def is_available() -> bool:
    return device_count() > 0


def set_device(index: int) -> None:
    global _current
    if not 0 <= index < device_count():
        raise ValueError(f"Lumen device {index} is not visible; this process sees {device_count()} device(s)")
    _current = index


def current_device() -> int:
    return _current


def synchronize(device: int | None = None) -> None:
    """Wait for the device's queued work: nothing to wait for, Lumen runs on the CPU synchronously."""


def empty_cache() -> None:
    """Release cached device memory: Lumen has no caching allocator of its own."""


def graph_pool_handle() -> None:
    """The graphs' shared memory pool: the CPU graph needs none."""
    return None
