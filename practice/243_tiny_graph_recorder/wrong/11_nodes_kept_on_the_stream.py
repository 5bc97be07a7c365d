# Mistake: Keeps the recorded launches on the stream, and every graph captured on that stream shares that one list.
from __future__ import annotations

import contextlib
import copy
from typing import Any, Callable, Iterator


class Buffer:
    """Device memory: kernels read and write ``data`` in place. Given; do not change."""

    def __init__(self, values: list) -> None:
        self.data = list(values)


class Stream:
    def __init__(self) -> None:
        self.capturing = False
        self.recorded: list[tuple[Callable, tuple]] = []

    def launch(self, kernel: Callable, *args: Any) -> None:
        if not self.capturing:
            kernel(*args)
            return
        self.recorded.append((kernel, tuple(a if isinstance(a, Buffer) else copy.deepcopy(a) for a in args)))


class Graph:
    def __init__(self) -> None:
        self.nodes: list[tuple[Callable, tuple]] | None = None

    @property
    def num_nodes(self) -> int:
        return len(self.nodes or [])

    @contextlib.contextmanager
    def capture(self, stream: Stream) -> Iterator[None]:
        if self.nodes is not None:
            raise RuntimeError("already captured")
        if stream.capturing:
            raise RuntimeError("stream already capturing")
        stream.capturing = True
        self.nodes = stream.recorded
        try:
            yield
        finally:
            stream.capturing = False

    def replay(self) -> None:
        if self.nodes is None:
            raise RuntimeError("not captured")
        for kernel, args in self.nodes:
            kernel(*args)
