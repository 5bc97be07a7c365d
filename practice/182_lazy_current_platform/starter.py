"""Exercise 182: the lazily created, cached, thread-safe platform behind ``current_platform``.

Fill in the TODOs. Keep the names: the tests use LazyPlatform(create), its _lock and get().
Standard library only.
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
        self._lock = threading.Lock()   # a plain (non-reentrant) lock: guard create() with it
        self._platform = None           # the created platform, None until the first get()

    def get(self) -> Platform:
        """The platform:
          - already created (self._platform is not None, even if the platform tests false): return it
            without touching self._lock;
          - otherwise take self._lock, check again, call self.create() once and cache the result;
          - an exception leaves nothing cached; an AttributeError becomes a RuntimeError (chained);
          - a get() from inside create() (same thread) raises RuntimeError, no deadlock.
        """
        # TODO
        raise NotImplementedError("TODO: implement LazyPlatform.get")
