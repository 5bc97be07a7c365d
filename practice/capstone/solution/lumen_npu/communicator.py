"""LumenCommunicator: Lumen's collectives are gloo's, run on the host memory under the Lumen tensors.

Lumen memory is host memory, so there is nothing to copy: each collective takes ``torch.ops.lumen.cpu_view``
of its Lumen tensors (CPU tensors over the same bytes) and hands them to the CPU communicator of chapter 8
(gloo, and its shared-memory all-reduce for small messages). An in-place collective (``all_reduce``,
``broadcast``) has then already written the Lumen tensor; one with a new result comes back to the device.
Inside a decode graph the view is what the graph records, so its replay all-reduces the same Lumen memory.
"""
from __future__ import annotations

from typing import Sequence

import torch

from mini_platform.distributed.communicator import CpuCommunicator


def host(x: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over ``x``'s bytes (``x`` itself when it is on the CPU already)."""
    return torch.ops.lumen.cpu_view(x)


class LumenCommunicator(CpuCommunicator):
    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        super().all_reduce(host(x))
        return x

    def broadcast(self, x: torch.Tensor, src: int = 0) -> torch.Tensor:
        super().broadcast(host(x), src)
        return x

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return super().all_gather(host(x), dim).to(x.device)

    def reduce_scatter(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        return super().reduce_scatter(host(x), dim).to(x.device)

    def all_to_all(self, x: torch.Tensor, input_split_sizes: Sequence[int] | None = None,
                   output_split_sizes: Sequence[int] | None = None) -> torch.Tensor:
        return super().all_to_all(host(x), input_split_sizes, output_split_sizes).to(x.device)
