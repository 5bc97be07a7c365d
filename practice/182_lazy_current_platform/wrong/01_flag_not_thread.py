# Mistake: Marks 'resolving' with a plain flag instead of the resolving thread's id, so another thread reading during creation gets the re-entry error.
"""Exercise 182 (reference): a lazily resolved, cached, thread-safe ``current_platform``.

The module-level ``__getattr__`` (PEP 562) runs only for names the module does not define, so
``current_platform`` costs nothing until someone asks for it, and a plugin can import this module
(for the base class) while the platform is not decided yet.
"""
from __future__ import annotations

import threading
from typing import Any, Optional


class CpuPlatform:
    device_type = "cpu"


def create_platform() -> object:
    """Build the platform object; the real engine applies the rules of exercise 180 here."""
    return CpuPlatform()


_lock = threading.Lock()
_platform: Optional[object] = None      # the resolved platform, None until the first access
_resolving: Optional[int] = None        # id of the thread running create_platform(), if any


def _resolve() -> object:
    global _platform, _resolving
    if _resolving is not None:
        # Waiting for our own lock would hang forever: say what happened instead.
        raise RuntimeError("current_platform was accessed while it is being resolved "
                           "(create_platform or a plugin it loads reads current_platform)")
    with _lock:
        if _platform is None:  # another thread may have resolved it while we waited
            _resolving = threading.get_ident()
            try:
                platform = create_platform()
            except AttributeError as exc:
                # An AttributeError escaping a module __getattr__ reads as "no such attribute".
                raise RuntimeError(f"resolving current_platform failed: {type(exc).__name__}: {exc}") from exc
            finally:
                _resolving = None
            _platform = platform
        return _platform


def clear_current_platform() -> None:
    """Forget the resolved platform; the next access resolves again."""
    global _platform
    with _lock:
        _platform = None


def __getattr__(name: str) -> Any:
    if name == "current_platform":
        platform = _platform
        return platform if platform is not None else _resolve()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "current_platform"])
