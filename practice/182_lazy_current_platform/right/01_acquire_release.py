# Correct: explicit acquire()/release() in try/finally, the creating thread kept as an owner attribute, the AttributeError wrapped in a nested helper; own message wording.
from __future__ import annotations

import threading


class LazyPlatform:
    def __init__(self, create):
        self.create = create
        self._lock = threading.Lock()
        self._platform = None
        self._owner = None

    def _build(self):
        try:
            return self.create()
        except AttributeError as err:
            raise RuntimeError("could not resolve current_platform: " + str(err)) from err

    def get(self):
        if self._platform is not None:
            return self._platform
        me = threading.get_ident()
        if self._owner is not None and self._owner == me:
            raise RuntimeError("re-entrant access to current_platform during its own creation")
        self._lock.acquire()
        try:
            if self._platform is None:
                self._owner = me
                try:
                    result = self._build()
                finally:
                    self._owner = None
                self._platform = result
            return self._platform
        finally:
            self._lock.release()
