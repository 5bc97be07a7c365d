"""A shared-memory all-reduce for the ranks of one machine (the CPU's answer to small decode messages).

vLLM's CPU backend does this in C++ (``csrc/cpu/shm.cpp`` at vLLM commit 1216cf57, driven by
``_CPUSHMDistributed`` in ``vllm/distributed/device_communicators/cpu_communicator.py`` at 02bdead9): each
rank owns a POSIX shared-memory segment, copies its input into it, bumps a stamp, waits until every other
rank's stamp says its data is there, then sums the other ranks' buffers into its own tensor (bf16/fp16 summed
in fp32), double-buffered so the next call can start while a slow peer still reads the last one. On NVIDIA
GPUs vLLM's custom all-reduce (``custom_all_reduce.py`` / ``csrc/custom_all_reduce.cuh``) is the same idea
with CUDA IPC buffers. gloo instead sends the bytes through loopback TCP, which costs tens of microseconds
per message whatever its size: for an 8 KiB decode message that is nearly all of the time.

Here, in Python: one segment for the whole group (rank 0 creates it; its name goes to the others over the
gloo group; rank 0 unlinks the name as soon as every rank has mapped it, so no ``/dev/shm`` entry can outlive
the group, however its processes end). Layout: a 64-byte line per rank holding its *generation* (how many
all-reduces it has written), one per rank saying it *left*, then two banks (generation parity) of one slot
per rank, ``max_bytes`` each.

One call, generation ``g`` on every rank: copy the input into slot ``[g % 2][rank]``; publish ``g``; wait until
every rank has published ``g`` (a deadline, and a peer that left, end the wait with an error naming the rank);
sum the slots **in rank order**, ``((x0 + x1) + x2) + ...`` (bf16/fp16 accumulated in fp32, rounded once), the
same order on every rank, so every rank gets the same bits. Two banks make it safe: a rank that publishes
``g + 1`` has finished reading generation ``g - 1``, whose bank ``g + 1`` reuses.
"""
from __future__ import annotations

import os
import secrets
import sys
import threading
import time
import weakref
from multiprocessing import resource_tracker, shared_memory

import torch
import torch.distributed as dist

LINE = 64                       # one cache line per flag, so that ranks do not write the same line
SEGMENT_PREFIX = "mini_platform_"  # + kind ("ar": all-reduce, "mq": message queue) + "_<creator pid>_<random>"
DEFAULT_MAX_BYTES = 1 << 20     # the largest message sent through shared memory (1 MiB: 128 bf16 tokens of 4096)
SPIN_S = 50e-6                  # poll without yielding this long, then yield, then sleep (a 2-core machine)
_fence_lock = threading.Lock()
yield_core = getattr(os, "sched_yield", lambda: time.sleep(0))  # let a waited-for process run


class ShmAllReduceTimeout(TimeoutError):
    """A rank did not arrive at a shared-memory all-reduce before the deadline; the message names it."""


class PeerLeftError(RuntimeError):
    """A rank closed its end of the shared-memory group while another waited for it."""


def memory_fence() -> None:
    """A full barrier between our plain stores/loads to shared memory: CPython's lock acquire and release are
    atomic operations with barrier semantics (x86 is ordered anyway; weakly ordered CPUs need it)."""
    with _fence_lock:
        pass


def attach_segment(name: str) -> shared_memory.SharedMemory:
    """Map an existing segment without registering it with the resource tracker, which spawned workers share
    with their parent and which would unlink it, or complain, when it shuts down (CPython issue 82300): Python
    3.13 has ``track=False``; before, registration is switched off while attaching (set-up runs in one thread)."""
    if sys.version_info >= (3, 13):
        return shared_memory.SharedMemory(name=name, track=False)
    register, resource_tracker.register = resource_tracker.register, lambda *args: None
    try:
        return shared_memory.SharedMemory(name=name)
    finally:
        resource_tracker.register = register


class ShmAllReduce:
    """Sum of a tensor over the ranks of ``group`` (all on this machine) through one shared-memory segment.

    Set-up is collective over ``group`` (a gloo group: it carries the segment's name and two barriers).
    ``all_reduce`` takes contiguous CPU tensors of at most ``max_bytes``; the caller routes bigger ones to gloo.
    """

    def __init__(self, group: dist.ProcessGroup, max_bytes: int = DEFAULT_MAX_BYTES,
                 timeout_s: float = 300.0) -> None:
        self.rank, self.world_size = dist.get_rank(group), dist.get_world_size(group)
        self.max_bytes = -(-max_bytes // LINE) * LINE
        self.timeout_s = timeout_s
        self.generation = 0
        header = 2 * self.world_size * LINE
        size = header + 2 * self.world_size * self.max_bytes
        names = [None]
        shm = None
        try:
            if self.rank == 0:
                shm = shared_memory.SharedMemory(segment_name("ar"),
                                                 create=True, size=size)
                shm.buf[:header] = bytes(header)
                names = [shm.name]
            dist.broadcast_object_list(names, src=dist.get_global_rank(group, 0), group=group)
            if self.rank != 0:
                shm = attach_segment(names[0])
            dist.barrier(group=group)   # every rank has mapped it
        finally:
            if self.rank == 0 and shm is not None:
                shm.unlink()            # the name goes now; the memory stays until the last rank unmaps it
        self.name = names[0]
        self._shm = shm
        self._flags = shm.buf[:header].cast("q")  # int64: generation of rank r at [r * 8], left at [(ws + r) * 8]
        self._slots = torch.frombuffer(shm.buf, dtype=torch.uint8, offset=header,
                                       count=size - header).view(2, self.world_size, self.max_bytes)
        self._finalizer = weakref.finalize(self, _close, shm, self._flags, self.rank, self.world_size)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum ``x`` over the ranks, in place (in rank order, the same bits on every rank); returns ``x``."""
        nbytes = x.numel() * x.element_size()
        if nbytes > self.max_bytes or not x.is_contiguous() or x.device.type != "cpu":
            raise ValueError(f"shm all-reduce takes contiguous CPU tensors of at most {self.max_bytes} bytes; "
                             f"got {tuple(x.shape)} {x.dtype} on {x.device} ({nbytes} bytes)")
        if not self._finalizer.alive:
            raise RuntimeError("this shared-memory all-reduce is closed")
        g = self.generation + 1
        bank = self._slots[g & 1, :, :nbytes]
        bank[self.rank].view(x.dtype).copy_(x.view(-1))
        memory_fence()
        self._flags[self.rank * 8] = g
        self._wait_for(g)
        memory_fence()
        self.generation = g
        parts = [bank[r].view(x.dtype) for r in range(self.world_size)]
        out = x.view(-1)
        if x.dtype in (torch.bfloat16, torch.float16):  # accumulate in fp32, round once (as vLLM's shm.cpp)
            acc = parts[0].float()
            for part in parts[1:]:
                acc.add_(part)
            out.copy_(acc)
        else:
            torch.add(parts[0], parts[1], out=out)
            for part in parts[2:]:
                out.add_(part)
        return x

    def _wait_for(self, g: int) -> None:
        """Until every rank has published generation ``g``: poll, then yield, then sleep; never past the deadline."""
        flags, ws = self._flags, self.world_size
        start = time.monotonic()
        pause = 0.0
        while True:
            missing = [r for r in range(ws) if flags[r * 8] < g]
            if not missing:
                return
            left = [r for r in missing if flags[(ws + r) * 8] and flags[r * 8] < g]  # re-read after "left"
            if left:
                raise PeerLeftError(f"shm all-reduce #{g}: rank(s) {left} left the shared-memory group while "
                                    f"rank {self.rank} waited for them (their process stopped)")
            waited = time.monotonic() - start
            if waited > self.timeout_s:
                raise ShmAllReduceTimeout(
                    f"shm all-reduce #{g}: rank(s) {missing} of {ws} did not arrive within {self.timeout_s:g} s "
                    f"(rank {self.rank} waited; a rank that skips a collective, or is stuck, leaves the others here)")
            if waited > 1e-3:           # a slow peer: sleep, backing off up to 1 ms
                time.sleep(pause)
                pause = min(1e-3, pause * 2 or 1e-6)
            elif waited > SPIN_S:       # give the core to the peer we wait for (2 ranks may share 2 cores)
                yield_core()

    def close(self) -> None:
        """Say this rank left (a peer still waiting gets an error, not a hang) and unmap (idempotent)."""
        self._slots = None
        self._finalizer()


def _close(shm: shared_memory.SharedMemory, flags: memoryview, rank: int, world_size: int) -> None:
    try:
        flags[(world_size + rank) * 8] = 1
        flags.release()
        shm.close()
    except (BufferError, ValueError):  # a tensor view still alive: the mapping goes when the process does
        pass


def segment_name(kind: str) -> str:
    return f"{SEGMENT_PREFIX}{kind}_{os.getpid()}_{secrets.token_hex(4)}"


def leaked_segments(pids: list[int] | None = None) -> list[str]:
    """This package's segments still in ``/dev/shm`` (created by one of ``pids``, if given). Linux only."""
    try:
        names = [n for n in os.listdir("/dev/shm") if n.startswith(SEGMENT_PREFIX)]
    except FileNotFoundError:
        return []
    return [n for n in names if pids is None or int(n[len(SEGMENT_PREFIX):].split("_")[1]) in pids]
