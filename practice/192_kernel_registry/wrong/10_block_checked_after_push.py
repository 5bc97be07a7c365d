# Mistake: Pushes the name onto the use_backend stack before validating it, so a failed use_backend leaves the unknown name active.
"""Exercise 192 (a wrong solution): a kernel registry that never falls back silently."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator


class KernelUnavailableError(NotImplementedError):
    """The chosen backend does not implement this kernel."""

    def __init__(self, kernel: str, backend: str, message: str) -> None:
        super().__init__(message)
        self.kernel, self.backend = kernel, backend


class KernelRegistry:
    def __init__(self, backends: list[str], default: str) -> None:
        self.backends = list(backends)
        self._table: dict[tuple[str, str], Callable[..., Any]] = {}
        self._stack: list[str] = []
        self.default = self._check(default)

    def _check(self, name: str) -> str:
        if name not in self.backends:
            raise ValueError(f"unknown backend {name!r}; choose one of {self.backends}")
        return name

    def register(self, kernel: str, backend: str) -> Callable[[Callable], Callable]:
        self._check(backend)
        if (kernel, backend) in self._table:
            raise ValueError(f"kernel {kernel!r} is already registered for backend {backend!r}")

        def decorate(fn: Callable) -> Callable:
            self._table[(kernel, backend)] = fn
            return fn
        return decorate

    @contextlib.contextmanager
    def use_backend(self, name: str) -> Iterator[None]:
        self._stack.append(name)
        self._check(name)
        try:
            yield
        finally:
            self._stack.pop()

    def current_backend(self, backend: str | None = None) -> str:
        return self._check(backend or (self._stack[-1] if self._stack else self.default))

    def get(self, kernel: str, backend: str | None = None) -> Callable[..., Any]:
        name = self.current_backend(backend)
        having = sorted(b for (k, b) in self._table if k == kernel)
        if not having:
            raise ValueError(f"unknown kernel {kernel!r}: no backend registers it")
        if (kernel, name) not in self._table:
            raise KernelUnavailableError(
                kernel, name, f"kernel {kernel!r} is not available in the {name!r} backend "
                              f"(available in: {', '.join(having)})")
        return self._table[(kernel, name)]

    def call(self, kernel: str, *args: Any, backend: str | None = None, **kwargs: Any) -> Any:
        return self.get(kernel, backend)(*args, **kwargs)
