# Mistake: Tests the cache with truthiness (`if self._platform:`), so a platform object that is falsy is created again on every get().
from __future__ import annotations

import threading


class LazyPlatform:
    def __init__(self, create):
        self.create = create
        self._lock = threading.Lock()
        self._platform = None
        self._resolving = None

    def get(self):
        if self._platform:
            return self._platform
        if self._resolving == threading.get_ident():
            raise RuntimeError("current_platform accessed while being resolved")
        with self._lock:
            if not self._platform:
                self._resolving = threading.get_ident()
                try:
                    self._platform = self.create()
                except AttributeError as exc:
                    raise RuntimeError(f"resolving current_platform failed: {exc}") from exc
                finally:
                    self._resolving = None
            return self._platform
