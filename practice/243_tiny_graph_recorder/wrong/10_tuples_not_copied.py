# Mistake: Skips the copy for tuples because they are immutable, so a list inside a tuple stays shared.
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
        self.capturing: Graph | None = None

    def launch(self, kernel: Callable, *args: Any) -> None:
        if self.capturing is None:
            kernel(*args)
            return
        frozen = tuple(a if isinstance(a, (Buffer, tuple)) else copy.deepcopy(a) for a in args)
        self.capturing.nodes.append((kernel, frozen))


class Graph:
    def __init__(self) -> None:
        self.nodes: list[tuple[Callable, tuple]] = []
        self.captured = False

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @contextlib.contextmanager
    def capture(self, stream: Stream) -> Iterator[None]:
        if self.captured:
            raise RuntimeError("this graph was already captured; make a new Graph")
        if stream.capturing is not None:
            raise RuntimeError("the stream is already capturing another graph")
        self.captured = True
        stream.capturing = self
        try:
            yield
        finally:
            stream.capturing = None

    def replay(self) -> None:
        if not self.captured:
            raise RuntimeError("replay() before capture(): nothing was recorded")
        for kernel, args in self.nodes:
            kernel(*args)
