"""The parallel groups of this process, built once per worker (vLLM's ``GroupCoordinator``, small).

``init_model_parallel`` runs in every worker after ``torch.distributed.init_process_group``. Layers ask
``get_tp_group()`` / ``get_ep_group()`` when they are built; without ``init_model_parallel`` (one process)
both are a single-rank group whose collectives return their input, so the model code has one path.
With no data parallelism here, the tensor-parallel group and the expert-parallel group span the same
ranks (vLLM: EP size = TP size x DP size).

Collectives as custom ops (chapter 7, piecewise graphs under tensor parallelism): while TorchDynamo traces the model,
``GroupCoordinator.all_reduce`` and ``all_gather`` call ``torch.ops.mini_platform.all_reduce_`` and ``all_gather``,
registered here with ``torch.library.custom_op`` and fake implementations, so that Dynamo records one opaque node
instead of tracing into the communicator (``fullgraph=True`` would refuse its ``torch.distributed`` calls). They are
no splitting ops: they stay inside the captured pieces, and a piece's CPU graph records the op as one node whose
replay runs the communicator again (really summing with the peers; every rank replays the same pieces in the same
order). A custom op takes tensors, numbers and strings, not a Python object, so it names its group by
``GroupCoordinator.unique_name`` and finds it in a registry, as vLLM does (``torch.ops.vllm.all_reduce``,
``all_gather`` and ``reduce_scatter`` with ``_groups`` keyed by ``unique_name``, ``vllm/distributed/parallel_state.py``
at commit 0c175ae9). vLLM's all-reduce op is out of place (its graphs go through functionalization and Inductor);
ours sums in place, declared with ``mutates_args``, as the communicator does, so a replay copies nothing. Outside a
trace the layers call the communicator directly (the op's dispatch would only add overhead to eager steps).
"""
from __future__ import annotations

import itertools
import weakref
from collections import defaultdict
from datetime import timedelta
from typing import Iterator, Sequence

import torch
import torch.distributed as dist

from .. import platforms, utils
from .communicator import DeviceCommunicator


# The groups with a communicator, by unique name, for the collective custom ops (weak: a destroyed group is gone).
_groups: dict[str, weakref.ref] = {}
_name_counters: defaultdict[str, Iterator[int]] = defaultdict(itertools.count)


def _group(group_name: str) -> "GroupCoordinator":
    group = _groups[group_name]() if group_name in _groups else None
    if group is None:
        raise ValueError(f"no live process group named {group_name!r} (known: {sorted(_groups)})")
    return group


@torch.library.custom_op("mini_platform::all_reduce_", mutates_args=("x",))
def all_reduce_op(x: torch.Tensor, group_name: str) -> None:
    """Sum ``x`` over the ranks of the group ``group_name``, in place, with its communicator."""
    out = _group(group_name).communicator.all_reduce(x)
    if out is not x:
        x.copy_(out)


@all_reduce_op.register_fake
def _(x: torch.Tensor, group_name: str) -> None:
    return None


@torch.library.custom_op("mini_platform::all_gather", mutates_args=())
def all_gather_op(x: torch.Tensor, dim: int, world_size: int, group_name: str) -> torch.Tensor:
    """Every rank's ``x`` concatenated along ``dim`` (``world_size`` is there for the fake's output shape)."""
    return _group(group_name).communicator.all_gather(x, dim)


@all_gather_op.register_fake
def _(x: torch.Tensor, dim: int, world_size: int, group_name: str) -> torch.Tensor:
    shape = list(x.shape)
    shape[dim] *= world_size
    return x.new_empty(shape)


class GroupCoordinator:
    """One parallel group as this process sees it: its size, this process's rank in it, and two groups over
    the same ranks, as vLLM's ``GroupCoordinator`` holds them: the device group (the platform's library,
    behind ``communicator``) for tensors, and a gloo ``cpu_group`` for metadata and barriers, which work
    whatever the device library is (vLLM: "don't use device_group ... NCCL barrier is terrible")."""

    def __init__(self, name: str, world_size: int = 1, rank_in_group: int = 0,
                 communicator: DeviceCommunicator | None = None, cpu_group: dist.ProcessGroup | None = None) -> None:
        self.name, self.world_size, self.rank_in_group = name, world_size, rank_in_group
        self.communicator, self.cpu_group = communicator, cpu_group
        self.unique_name = f"{name}:{next(_name_counters[name])}"  # what the collective custom ops name it by
        if communicator is not None:
            _groups[self.unique_name] = weakref.ref(self)

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
        _groups.pop(self.unique_name, None)
        if self.communicator is not None:
            self.communicator.close()

    # Each collective is a no-op on a single-rank group. While TorchDynamo traces, all_reduce and all_gather are
    # the custom ops above (one opaque node each); otherwise the communicator is called directly.
    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum over the ranks, in place; returns ``x``."""
        if self.world_size == 1:
            return x
        if torch.compiler.is_compiling():
            torch.ops.mini_platform.all_reduce_(x, self.unique_name)
            return x
        return self.communicator.all_reduce(x)

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        if self.world_size == 1:
            return x
        if torch.compiler.is_compiling():
            return torch.ops.mini_platform.all_gather(x, dim % x.dim(), self.world_size, self.unique_name)
        return self.communicator.all_gather(x, dim)

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
