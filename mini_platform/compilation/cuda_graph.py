"""The CUDA platform's static graph wrapper over ``torch.cuda.CUDAGraph``, as vLLM's ``CUDAGraphWrapper``
does for a full graph: one graph per capture size, all in the platform's global memory pool."""
from __future__ import annotations

from typing import Any, Callable

import torch

from ..platforms.cuda import CudaPlatform


class CUDAGraphWrapper:
    """Capture ``runnable(size)`` into a ``torch.cuda.CUDAGraph`` per size; replay it."""

    def __init__(self, runnable: Callable[[int], torch.Tensor], device: str | torch.device) -> None:
        if torch.device(device).type != "cuda":
            raise ValueError(f"CUDA graphs capture work on an NVIDIA GPU; the model is on {device}")
        self.runnable = runnable
        self.pool = CudaPlatform.get_global_graph_pool()
        self.entries: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}

    def capture(self, size: int) -> None:
        self.runnable(size)  # warm-up outside the graph: Triton compiles its kernels on the first call
        torch.cuda.synchronize()
        cuda_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(cuda_graph, pool=self.pool):
            output = self.runnable(size)
        self.entries[size] = (cuda_graph, output)

    def replay(self, size: int, metadata: Any = None) -> torch.Tensor:
        cuda_graph, output = self.entries[size]
        cuda_graph.replay()
        return output
