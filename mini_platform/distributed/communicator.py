"""Device communicators: the collectives of one process group, through the real ``torch.distributed``.

The platform names its class as a string (``Platform.get_device_communicator_cls()``) and its library
as ``Platform.dist_backend``; the group is created with that backend, and the communicator keeps its
tensors on the platform's device. Here the collectives are the same ``torch.distributed`` calls for gloo,
NCCL and HCCL: what changes per platform is the backend string and the device. One exception, as in vLLM:
on the CPU, small all-reduces go through shared memory (``shm_allreduce``, set up over the gloo group).

vLLM goes further on CUDA: ``CudaCommunicator.all_reduce`` (vLLM commit 089eca13,
``vllm/distributed/device_communicators/cuda_communicator.py``) tries its quick all-reduce (ROCm MI300
only), then its custom all-reduce (TP groups, small messages), then symmetric memory, then PyNccl, and
calls ``torch.distributed.all_reduce`` only as the fallback when PyNccl declines. vllm-ascend's
``NPUCommunicator`` (v0.11.0, ``vllm_ascend/distributed/communicator.py``) keeps the base class's
``torch.distributed`` calls over HCCL and overrides only ``all_to_all``.

| collective | input on each rank | output on each rank |
| --- | --- | --- |
| ``all_reduce`` | ``x`` | the sum of every rank's ``x`` |
| ``all_gather`` | ``x`` | every rank's ``x`` concatenated along ``dim``, rank 0 first |
| ``reduce_scatter`` | ``x`` | this rank's slice (along ``dim``) of the sum of every rank's ``x`` |
| ``all_to_all`` | rows cut in ``input_split_sizes`` pieces, piece ``j`` for rank ``j`` | the pieces sent here, rank 0's first |
| ``broadcast`` | ``x`` on rank ``src`` | a copy of it |
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.distributed as dist

from .. import envs
from ..ops.graph import is_capturing
from . import shm_allreduce


class DeviceCommunicator:
    """Collectives over ``group`` for tensors on ``device``. Ranks named here are ranks *in the group*."""

    def __init__(self, group: dist.ProcessGroup, device: torch.device) -> None:
        self.group, self.device = group, device
        self.rank, self.world_size = dist.get_rank(group), dist.get_world_size(group)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum over the ranks, in place; returns ``x``. While a CPU graph captures (a decode graph in a
        tensor-parallel worker), the same sum goes as a functional collective and its wait, which the graph
        records and replays; a ``torch.distributed`` call would be refused there."""
        if is_capturing():
            torch.ops._c10d_functional.all_reduce_(x, "sum", self.group.group_name)
            torch.ops._c10d_functional.wait_tensor(x)
            return x
        dist.all_reduce(x, group=self.group)
        return x

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """Concatenate every rank's ``x`` (same shape everywhere) along ``dim``."""
        dim = dim % x.dim()
        out = torch.empty((self.world_size * x.shape[0],) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        dist.all_gather_single(out, x.contiguous(), group=self.group)
        if dim == 0:
            return out
        return torch.cat(out.chunk(self.world_size, dim=0), dim=dim)

    def reduce_scatter(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        """Sum over the ranks, then keep slice ``rank`` of ``world_size`` equal slices along ``dim``."""
        dim = dim % x.dim()
        if x.shape[dim] % self.world_size:
            raise ValueError(f"reduce_scatter: dim {dim} of size {x.shape[dim]} is not divisible by the "
                             f"group size {self.world_size}; pad it first")
        stacked = torch.cat(x.chunk(self.world_size, dim=dim), dim=0) if dim else x.contiguous()
        out = torch.empty((stacked.shape[0] // self.world_size,) + tuple(stacked.shape[1:]),
                          dtype=x.dtype, device=x.device)
        dist.reduce_scatter_single(out, stacked, group=self.group)
        return out

    def all_to_all(self, x: torch.Tensor, input_split_sizes: Sequence[int] | None = None,
                   output_split_sizes: Sequence[int] | None = None) -> torch.Tensor:
        """Send rows ``x[offset_j : offset_j + input_split_sizes[j]]`` to rank ``j``; receive
        ``output_split_sizes[i]`` rows from rank ``i``. Without sizes every rank sends equal pieces.
        Uses ``all_to_all_single``: gloo has no list-form ``all_to_all``."""
        rows = x.shape[0] if output_split_sizes is None else sum(output_split_sizes)
        out = torch.empty((rows,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
        dist.all_to_all_single(out, x.contiguous(), None if output_split_sizes is None else list(output_split_sizes),
                               None if input_split_sizes is None else list(input_split_sizes), group=self.group)
        return out

    def broadcast(self, x: torch.Tensor, src: int = 0) -> torch.Tensor:
        """Overwrite ``x`` on every rank with rank ``src``'s; returns ``x``."""
        dist.broadcast(x, group=self.group, group_src=src)
        return x


    def close(self) -> None:
        """Release what the communicator holds beside its group (idempotent); the group itself is torch's."""


class CpuCommunicator(DeviceCommunicator):
    """gloo on the CPU, and a shared-memory all-reduce for small messages (vLLM's CPU backend has one too).

    ``all_reduce`` of a contiguous tensor of at most ``shm_max_bytes`` goes through :class:`ShmAllReduce`
    (every rank of a group here is on this machine); a bigger one goes through gloo, and so does every
    all-reduce while a CPU graph captures (the functional collective a full decode graph replays; a compiled
    model's piece records the collective custom op of ``parallel_state`` instead, whose replays call this again
    and so take shared memory) and all of them when ``MINI_PLATFORM_CPU_SHM_ALLREDUCE=0``. gloo has no list-form
    all-to-all and emulates reduce-scatter with an all-reduce (twice the traffic; ProcessGroupGloo.cpp at PyTorch
    c194358); the base class only uses calls gloo implements."""

    def __init__(self, group: dist.ProcessGroup, device: torch.device,
                 shm_max_bytes: int = shm_allreduce.DEFAULT_MAX_BYTES) -> None:
        super().__init__(group, device)
        self.shm = None
        if self.world_size > 1 and envs.cpu_shm_allreduce():
            self.shm = shm_allreduce.ShmAllReduce(group, shm_max_bytes, timeout_s=_group_timeout_s(group))

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        if (self.shm is not None and not is_capturing() and x.is_contiguous()
                and x.numel() * x.element_size() <= self.shm.max_bytes):
            return self.shm.all_reduce(x)
        return super().all_reduce(x)

    def close(self) -> None:
        if self.shm is not None:
            self.shm.close()


def _group_timeout_s(group: dist.ProcessGroup, default: float = 300.0) -> float:
    """The timeout the group's gloo backend was made with (a shared-memory wait gives up after the same)."""
    try:
        return group._get_backend(torch.device("cpu")).options._timeout.total_seconds()  # noqa: SLF001
    except (AttributeError, RuntimeError):
        return default


class CudaCommunicator(DeviceCommunicator):
    """NCCL on NVIDIA GPUs: one GPU per rank (``cuda:<local rank>``), made the current device so that NCCL's
    streams and buffers live there. NCCL works on GPU memory only."""

    def __init__(self, group: dist.ProcessGroup, device: torch.device) -> None:
        super().__init__(group, device)
        torch.cuda.set_device(device)
