# Correct: validates a registration inside the decorator (when it is applied), keeps a nested dict kernel -> {backend: fn}, and raises KernelUnavailableError with its own message wording.
from __future__ import annotations

import contextlib


class KernelUnavailableError(NotImplementedError):
    def __init__(self, kernel, backend, message):
        super().__init__(message)
        self.kernel, self.backend = kernel, backend


class KernelRegistry:
    def __init__(self, backends, default):
        if default not in backends:
            raise ValueError(f"default backend {default} is not in {backends}")
        self.backends = tuple(backends)
        self.default = default
        self.kernels = {}
        self.stack = []

    def _known(self, name):
        if name not in self.backends:
            raise ValueError(f"no backend called {name}")

    def register(self, kernel, backend):
        def decorator(fn):
            self._known(backend)
            impls = self.kernels.setdefault(kernel, {})
            if backend in impls:
                raise ValueError(f"{kernel} already has a {backend} implementation")
            impls[backend] = fn
            return fn
        return decorator

    @contextlib.contextmanager
    def use_backend(self, name):
        self._known(name)
        self.stack.append(name)
        try:
            yield
        finally:
            del self.stack[-1]

    def current_backend(self, backend=None):
        if backend is None:
            backend = self.stack[-1] if self.stack else self.default
        self._known(backend)
        return backend

    def get(self, kernel, backend=None):
        chosen = self.current_backend(backend)
        impls = self.kernels.get(kernel)
        if not impls:
            raise ValueError(f"no kernel named {kernel}")
        if chosen not in impls:
            raise KernelUnavailableError(
                kernel, chosen,
                f"{kernel} has no {chosen} implementation; available in: {', '.join(sorted(impls))}")
        return impls[chosen]

    def call(self, kernel, *args, backend=None, **kwargs):
        fn = self.get(kernel, backend=backend)
        return fn(*args, **kwargs)
