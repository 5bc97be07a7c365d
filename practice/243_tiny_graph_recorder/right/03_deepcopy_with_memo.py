# Correct: Deep-copies the whole argument tuple at once with a memo that maps every Buffer to itself, and keeps the recording state in one Graph attribute.
from __future__ import annotations

import contextlib
import copy


class Buffer:
    """Device memory: kernels read and write ``data`` in place. Given; do not change."""

    def __init__(self, values: list) -> None:
        self.data = list(values)


class Stream:
    def __init__(self):
        self.into = None

    def launch(self, kernel, *args):
        if self.into is None:
            return kernel(*args)
        memo = {id(a): a for a in args if isinstance(a, Buffer)}
        self.into.recorded.append((kernel, copy.deepcopy(args, memo)))


class Graph:
    def __init__(self):
        self.recorded = []
        self.state = "new"

    @property
    def num_nodes(self):
        return len(self.recorded)

    @contextlib.contextmanager
    def capture(self, stream):
        if self.state != "new":
            raise RuntimeError(f"graph is {self.state}, cannot capture again")
        if stream.into is not None:
            raise RuntimeError("stream is capturing already")
        self.state, stream.into = "captured", self
        try:
            yield
        finally:
            stream.into = None

    def replay(self):
        if self.state == "new":
            raise RuntimeError("graph not captured")
        for kernel, args in self.recorded:
            kernel(*args)
