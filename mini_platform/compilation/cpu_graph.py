"""The CPU platform's static graph wrapper: one :class:`mini_platform.ops.graph.Graph` per capture size.

Only the ``cpu`` kernel backend can be captured this way: its kernels are plain torch (its numba kernels step
aside while a graph captures), so the recorder sees every operation (the Triton interpreter and the torch_npu
emulation are not).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from ..ops.graph import Graph, graph


class CPUGraphWrapper:
    """Capture ``runnable(size)`` into a CPU graph per size; replay it on the same tensors."""

    def __init__(self, runnable: Callable[[int], torch.Tensor], device: str | torch.device) -> None:
        if torch.device(device).type != "cpu":
            raise ValueError(f"the CPU graph records operations on CPU tensors; the model is on {device}")
        self.runnable = runnable
        self.entries: dict[int, tuple[Graph, torch.Tensor]] = {}

    def capture(self, size: int) -> None:
        cpu_graph = Graph()
        with graph(cpu_graph):
            output = self.runnable(size)
        self.entries[size] = (cpu_graph, output)

    def replay(self, size: int, metadata: Any = None) -> torch.Tensor:
        cpu_graph, output = self.entries[size]
        cpu_graph.replay()
        return output
