# Correct: Records each launch as a functools.partial of the frozen arguments, marks "never captured" with nodes = None, and checks the stream before the graph.
from __future__ import annotations

import contextlib
import copy
import functools


class Buffer:
    """Device memory: kernels read and write ``data`` in place. Given; do not change."""

    def __init__(self, values: list) -> None:
        self.data = list(values)


class Stream:
    def __init__(self):
        self.graph = None

    def launch(self, kernel, *args):
        if self.graph is not None:
            frozen = [arg if isinstance(arg, Buffer) else copy.deepcopy(arg) for arg in args]
            self.graph.nodes.append(functools.partial(kernel, *frozen))
        else:
            kernel(*args)


class Graph:
    def __init__(self):
        self.nodes = None

    @property
    def num_nodes(self):
        return 0 if self.nodes is None else len(self.nodes)

    @contextlib.contextmanager
    def capture(self, stream):
        if stream.graph is not None:
            raise RuntimeError("stream busy: it is capturing")
        if self.nodes is not None:
            raise RuntimeError("graph captured before")
        self.nodes = []
        stream.graph = self
        try:
            yield self
        finally:
            stream.graph = None

    def replay(self):
        if self.nodes is None:
            raise RuntimeError("capture first")
        for node in self.nodes:
            node()
