"""LumenCommunicator: Lumen's collectives are gloo's, run on the host memory under the Lumen tensors."""
from __future__ import annotations

from typing import Sequence

import torch

from mini_platform.distributed.communicator import CpuCommunicator


class LumenCommunicator(CpuCommunicator):
    # TODO(stage 264): gloo takes CPU tensors only: hand each collective of the parent class
    #                  torch.ops.lumen.cpu_view(x) (the same bytes, seen as a CPU tensor). all_reduce and broadcast
    #                  work in place and return x; all_gather, reduce_scatter and all_to_all return a new tensor,
    #                  which goes back to x.device.
    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("LumenCommunicator.all_reduce")

    def broadcast(self, x: torch.Tensor, src: int = 0) -> torch.Tensor:
        raise NotImplementedError("LumenCommunicator.broadcast")

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        raise NotImplementedError("LumenCommunicator.all_gather")

    def reduce_scatter(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        raise NotImplementedError("LumenCommunicator.reduce_scatter")

    def all_to_all(self, x: torch.Tensor, input_split_sizes: Sequence[int] | None = None,
                   output_split_sizes: Sequence[int] | None = None) -> torch.Tensor:
        raise NotImplementedError("LumenCommunicator.all_to_all")
