"""Exercise 182: a lazily resolved, cached, thread-safe ``current_platform``.

Fill in the TODOs. Keep the names: the tests use create_platform, _lock, clear_current_platform,
__getattr__ and __dir__. Standard library only.
"""
from __future__ import annotations

import threading
from typing import Any, Optional


class CpuPlatform:
    device_type = "cpu"


def create_platform() -> object:
    """Build the platform object; the real engine applies the rules of exercise 180 here."""
    return CpuPlatform()


_lock = threading.Lock()               # a plain (non-reentrant) lock: guard create_platform() with it
_platform: Optional[object] = None     # the resolved platform, None until the first access


def clear_current_platform() -> None:
    """Forget the resolved platform; the next access resolves again."""
    global _platform
    with _lock:
        _platform = None


def __getattr__(name: str) -> Any:
    """Called only for names this module does not define.

    "current_platform":
      - already resolved: return it without touching the lock;
      - otherwise take _lock, check again, call create_platform() once and cache the result;
      - an exception leaves nothing cached; an AttributeError becomes a RuntimeError (chained);
      - an access from inside create_platform() (same thread) raises RuntimeError, no deadlock.
    Any other name: AttributeError naming it.
    """
    # TODO
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names plus "current_platform"."""
    # TODO
    return sorted(globals())
