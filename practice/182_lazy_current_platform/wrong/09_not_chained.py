# Mistake: Turns the AttributeError into a RuntimeError with its message but raises it without `from exc`, so the original is only the implicit __context__, not the __cause__.
from __future__ import annotations

import threading


class LazyPlatform:
    def __init__(self, create):
        self.create = create
        self._lock = threading.Lock()
        self._platform = None
        self._resolving = None

    def get(self):
        if self._platform is not None:
            return self._platform
        if self._resolving == threading.get_ident():
            raise RuntimeError("current_platform accessed while being resolved")
        with self._lock:
            if self._platform is None:
                self._resolving = threading.get_ident()
                try:
                    self._platform = self.create()
                except AttributeError as exc:
                    raise RuntimeError(f"resolving current_platform failed: {exc}")
                finally:
                    self._resolving = None
            return self._platform
