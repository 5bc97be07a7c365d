# Correct: use_backend saves the previous choice in a local and restores it in finally (no stack), get looks for the kernel before resolving the backend, the message built from a sorted set.
from __future__ import annotations

import contextlib


class KernelUnavailableError(NotImplementedError):
    """The chosen backend does not implement this kernel."""

    def __init__(self, kernel, backend, message):
        super().__init__(message)
        self.kernel, self.backend = kernel, backend


class KernelRegistry:
    def __init__(self, backends, default):
        self.backends = list(backends)
        if default not in self.backends:
            raise ValueError("default must be one of the backends")
        self.default = default
        self._active = None
        self._impls = {}

    def register(self, kernel, backend):
        if backend not in self.backends:
            raise ValueError("unknown backend: " + backend)
        key = (kernel, backend)
        if key in self._impls:
            raise ValueError("duplicate registration: %s/%s" % key)

        def wrap(fn):
            self._impls[key] = fn
            return fn
        return wrap

    @contextlib.contextmanager
    def use_backend(self, name):
        if name not in self.backends:
            raise ValueError("unknown backend: " + str(name))
        previous, self._active = self._active, name
        try:
            yield
        finally:
            self._active = previous

    def current_backend(self, backend=None):
        name = backend if backend is not None else (self._active if self._active is not None else self.default)
        if name not in self.backends:
            raise ValueError("unknown backend: " + str(name))
        return name

    def get(self, kernel, backend=None):
        having = {b for (k, b) in self._impls if k == kernel}
        if not having:
            raise ValueError(f"kernel {kernel!r} is registered nowhere (typo?)")
        name = self.current_backend(backend)
        if name not in having:
            raise KernelUnavailableError(kernel, name, "kernel %r is not available in the %r backend "
                                         "(available in: %s)" % (kernel, name, ", ".join(sorted(having))))
        return self._impls[(kernel, name)]

    def call(self, kernel, *args, backend=None, **kwargs):
        return self.get(kernel, backend)(*args, **kwargs)
