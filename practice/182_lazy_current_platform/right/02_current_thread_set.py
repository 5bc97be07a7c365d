# Correct: records the creating threads in a set of threading.current_thread() objects, checks the cache again inside the lock with an early return, and wraps the AttributeError via an except-else structure.
from __future__ import annotations

import threading


class LazyPlatform:
    def __init__(self, create):
        self.create = create
        self._lock = threading.Lock()
        self._platform = None
        self._creating = set()

    def get(self):
        cached = self._platform
        if cached is not None:
            return cached
        if threading.current_thread() in self._creating:
            raise RuntimeError("current_platform read again while being created: would deadlock")
        with self._lock:
            if self._platform is not None:
                return self._platform
            self._creating.add(threading.current_thread())
            try:
                platform = self.create()
            except AttributeError as exc:
                raise RuntimeError(f"{exc} (while resolving current_platform)") from exc
            else:
                self._platform = platform
                return platform
            finally:
                self._creating.discard(threading.current_thread())
