"""The parallel groups of this process, built once per worker (vLLM's ``GroupCoordinator``, small).

``init_model_parallel`` runs in every worker after ``torch.distributed.init_process_group``. Layers ask
``get_tp_group()`` / ``get_ep_group()`` when they are built; without ``init_model_parallel`` (one process)
both are a single-rank group whose collectives return their input, so the model code has one path.
With no data parallelism here, the tensor-parallel group and the expert-parallel group span the same
ranks (vLLM: EP size = TP size x DP size).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Sequence

import torch
import torch.distributed as dist

from .. import platforms, utils
from .communicator import DeviceCommunicator


class GroupCoordinator:
    """One parallel group as this process sees it: its size, this process's rank in it, and two groups over
    the same ranks, as vLLM's ``GroupCoordinator`` holds them: the device group (the platform's library,
    behind ``communicator``) for tensors, and a gloo ``cpu_group`` for metadata and barriers, which work
    whatever the device library is (vLLM: "don't use device_group ... NCCL barrier is terrible")."""

    def __init__(self, name: str, world_size: int = 1, rank_in_group: int = 0,
                 communicator: DeviceCommunicator | None = None, cpu_group: dist.ProcessGroup | None = None) -> None:
        self.name, self.world_size, self.rank_in_group = name, world_size, rank_in_group
        self.communicator, self.cpu_group = communicator, cpu_group

    @classmethod
    def create(cls, name: str, group_ranks: list[list[int]], backend: str, device: torch.device,
               timeout: timedelta | None = None) -> "GroupCoordinator":
        """Every process calls ``new_group`` for every rank list (a collective) and keeps the one it is in."""
        mine = None
        for ranks in group_ranks:
            device_group = dist.new_group(ranks, backend=backend, timeout=timeout)
            cpu_group = dist.new_group(ranks, backend="gloo", timeout=timeout)
            if dist.get_rank() in ranks:
                mine = (ranks, device_group, cpu_group)
        if mine is None:
            raise ValueError(f"rank {dist.get_rank()} is in none of the {name} groups {group_ranks}")
        ranks, device_group, cpu_group = mine
        communicator_cls = utils.resolve_obj_by_qualname(platforms.current_platform.get_device_communicator_cls())
        return cls(name, len(ranks), ranks.index(dist.get_rank()), communicator_cls(device_group, device), cpu_group)

    def barrier(self) -> None:
        """Wait for every rank of the group, over the gloo ``cpu_group``."""
        if self.world_size > 1:
            dist.barrier(group=self.cpu_group)

    def broadcast_object(self, obj: object = None, src: int = 0) -> object:
        """Rank ``src``'s picklable ``obj`` on every rank, over the ``cpu_group`` (no device memory involved)."""
        if self.world_size == 1:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=dist.get_global_rank(self.cpu_group, src), group=self.cpu_group)
        return box[0]

    def destroy(self) -> None:
        """Release the communicator's own resources (its shared memory, on the CPU)."""
        if self.communicator is not None:
            self.communicator.close()

    # Each collective is a no-op on a single-rank group.
    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.world_size == 1 else self.communicator.all_reduce(x)

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return x if self.world_size == 1 else self.communicator.all_gather(x, dim)

    def reduce_scatter(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        return x if self.world_size == 1 else self.communicator.reduce_scatter(x, dim)

    def all_to_all(self, x: torch.Tensor, input_split_sizes: Sequence[int] | None = None,
                   output_split_sizes: Sequence[int] | None = None) -> torch.Tensor:
        if self.world_size == 1:
            return x
        return self.communicator.all_to_all(x, input_split_sizes, output_split_sizes)

    def broadcast(self, x: torch.Tensor, src: int = 0) -> torch.Tensor:
        return x if self.world_size == 1 else self.communicator.broadcast(x, src)

    def __repr__(self) -> str:
        return f"<GroupCoordinator {self.name} rank {self.rank_in_group} of {self.world_size}>"


_TP: GroupCoordinator | None = None
_EP: GroupCoordinator | None = None
_MOE_COMM = "alltoall"


def init_model_parallel(tensor_parallel_size: int, enable_expert_parallel: bool, device: torch.device,
                        moe_comm: str = "alltoall", timeout: timedelta | None = None) -> None:
    """Build this worker's TP group (and EP group, if asked) from the world ``init_process_group`` made.
    ``moe_comm`` is how MoE layers exchange tokens under EP (see ``moe_dispatch``); ``timeout`` bounds
    every wait of the groups' collectives (None: torch's default)."""
    global _TP, _EP, _MOE_COMM
    world = dist.get_world_size()
    if world != tensor_parallel_size:
        raise ValueError(f"world size {world} != tensor_parallel_size={tensor_parallel_size}")
    backend = platforms.current_platform.dist_backend
    ranks = [list(range(world))]  # one TP group; consecutive ranks, as vLLM orders them
    _TP = GroupCoordinator.create("tp", ranks, backend, device, timeout)
    _EP = GroupCoordinator.create("ep", ranks, backend, device, timeout) if enable_expert_parallel else None
    _MOE_COMM = moe_comm


def destroy_model_parallel() -> None:
    """Forget the groups, releasing their communicators' resources first (safe to call more than once)."""
    global _TP, _EP, _MOE_COMM
    for group in (_TP, _EP):
        if group is not None:
            group.destroy()
    _TP = _EP = None
    _MOE_COMM = "alltoall"


def get_tp_group() -> GroupCoordinator:
    return _TP if _TP is not None else GroupCoordinator("tp")


def get_ep_group() -> GroupCoordinator | None:
    """The expert-parallel group, or None when experts are not split (each rank holds every expert)."""
    return _EP


def get_moe_comm() -> str:
    """How MoE layers exchange tokens across the EP group: ``"alltoall"`` or ``"allgather"``."""
    return _MOE_COMM
