# Mistake: Caches the exception in place of the platform: later get() calls hand back the exception object instead of trying again.
"""Exercise 182 (reference): the lazily created, cached, thread-safe platform behind ``current_platform``.

The engine's module ``__getattr__`` (PEP 562) runs only for names the module does not define, so
``current_platform`` costs nothing until someone asks for it; it answers with ``LazyPlatform.get()``.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from mini_platform.platforms import Platform


class LazyPlatform:
    """The platform, created by ``create`` on the first ``get()`` and cached."""

    def __init__(self, create: Callable[[], Platform]) -> None:
        self.create = create
        self._lock = threading.Lock()
        self._platform = None
        self._resolving = None      # id of the thread running create(), if any

    def get(self) -> Platform:
        platform = self._platform
        if platform is not None:    # the fast path: no lock
            return platform
        if self._resolving == threading.get_ident():
            # Waiting for our own lock would hang forever: say what happened instead.
            raise RuntimeError("current_platform was accessed while it is being resolved "
                               "(create, or a plugin it loads, reads current_platform)")
        with self._lock:
            if self._platform is None:  # another thread may have resolved it while we waited
                self._resolving = threading.get_ident()
                if isinstance(self._platform, BaseException):
                    raise self._platform
                try:
                    self._platform = self.create()
                except Exception as exc:
                    if not isinstance(exc, AttributeError):
                        self._platform = exc
                        raise
                    # An AttributeError escaping a module __getattr__ reads as "no such attribute".
                    raise RuntimeError(f"resolving current_platform failed: {type(exc).__name__}: {exc}") from exc
                finally:
                    self._resolving = None
            return self._platform
