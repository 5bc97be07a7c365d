"""The CPU platform's static graph wrapper: one :class:`mini_platform.ops.graph.Graph` per capture size.

Only the ``cpu`` kernel backend can be captured this way: its torch kernels are aten calls the recorder sees, and its
numba kernels add themselves to the graph as one node each (``ops.cpu.compiled.KernelNode``: the kernel and the memory
it reads and writes, as a CUDA graph records a launch). The Triton interpreter and the torch_npu emulation are neither.
A replay runs no Python of the model: at batch 1 in bf16 on a 2-core Xeon that takes a Qwen2.5-0.5B-sized decode step
from 0.69 to 0.84 of the memory-bandwidth floor (``benchmarks/decode_floor.py``).
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
