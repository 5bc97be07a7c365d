"""Exercise 192: a kernel registry that never falls back silently.

Fill in the TODOs. Keep the names: the tests import them.
"""
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
        # TODO: validate default, set up the (kernel, backend) -> function table and the use_backend stack
        raise NotImplementedError("KernelRegistry")

    def register(self, kernel: str, backend: str) -> Callable[[Callable], Callable]:
        # TODO: ValueError for an unknown backend or a second registration
        raise NotImplementedError("register")

    @contextlib.contextmanager
    def use_backend(self, name: str) -> Iterator[None]:
        # TODO: ValueError before the block for an unknown name; restore on exit, also on exceptions
        raise NotImplementedError("use_backend")
        yield

    def current_backend(self, backend: str | None = None) -> str:
        # TODO: argument > innermost use_backend > default
        raise NotImplementedError("current_backend")

    def get(self, kernel: str, backend: str | None = None) -> Callable[..., Any]:
        # TODO: ValueError if no backend has it; KernelUnavailableError if the chosen one lacks it
        raise NotImplementedError("get")

    def call(self, kernel: str, *args: Any, backend: str | None = None, **kwargs: Any) -> Any:
        return self.get(kernel, backend)(*args, **kwargs)
