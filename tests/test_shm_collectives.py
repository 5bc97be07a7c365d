"""Shared memory between the ranks of one machine: the CPU all-reduce and the executor's step broadcast.

The multi-process tests fork their ranks (no fresh interpreter to import torch: well under a second each)
and join them by a gloo group; every process is reaped before a test returns. The engine end to end at
TP=2, which takes the shared-memory path by default, is ``test_parallel_greedy_equals_one_process`` in
test_distributed.py; a worker killed in the middle is ``test_killed_worker_...`` there (both also check here
that no segment is left).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time

import pytest
import torch
import torch.distributed as dist

from mini_platform.distributed.communicator import CpuCommunicator
from mini_platform.distributed.shm_allreduce import ShmAllReduce, ShmAllReduceTimeout, leaked_segments
from mini_platform.distributed.shm_broadcast import MessageQueue, broadcast, receive
from mini_platform.executor.multiproc import free_port

LIMIT = 4096  # bytes: 1000 fp32 / bf16 elements go through shared memory, 3000 fp32 do not
CASES = [(torch.float32, 1000), (torch.float32, 3000), (torch.bfloat16, 1000), (torch.bfloat16, 3000)]


def run_ranks(fn, world: int, timeout_s: float = 60.0) -> tuple[list, list[int]]:
    """``fn(rank, world)`` in ``world`` forked processes joined by one gloo group: (results by rank, pids)."""
    ctx = mp.get_context("fork")
    init, results = f"tcp://127.0.0.1:{free_port()}", ctx.Queue()

    def main(rank):
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
        try:
            results.put((rank, fn(rank, world)))
        except BaseException as exc:  # noqa: BLE001 - the parent raises it
            results.put((rank, RuntimeError(f"rank {rank}: {type(exc).__name__}: {exc}")))

    procs = [ctx.Process(target=main, args=(rank,), daemon=True) for rank in range(world)]
    out = {}
    try:
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout_s
        while len(out) < world and time.monotonic() < deadline:
            try:
                rank, value = results.get(timeout=0.2)
                out[rank] = value
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    for value in out.values():
        if isinstance(value, Exception):
            raise value
    return [out.get(rank) for rank in range(world)], [p.pid for p in procs]


def _reduce_both_ways(rank: int, world: int) -> dict:
    comm = CpuCommunicator(dist.group.WORLD, torch.device("cpu"), shm_max_bytes=LIMIT)
    got = {}
    for dtype, n in CASES:
        x = torch.randn(n, generator=torch.Generator().manual_seed(100 * rank + n)).to(dtype)
        before = comm.shm.generation
        shm, gloo = comm.all_reduce(x.clone()), x.clone()
        dist.all_reduce(gloo)
        got[str(dtype), n] = [t.double().tolist() for t in (x, shm, gloo)] + [comm.shm.generation - before]
    comm.close()
    dist.destroy_process_group()
    return got


@pytest.mark.parametrize("world", [2, 3])
def test_shm_all_reduce_equals_gloo_below_and_above_the_limit(world):
    """2 ranks: the same bits as gloo (a + b = b + a). 3 ranks: every rank gets the same bits, the sum in rank
    order ((x0 + x1) + x2), bf16 accumulated in fp32 and rounded once; gloo's order differs, so only close."""
    results, pids = run_ranks(_reduce_both_ways, world)
    for dtype, n in CASES:
        key = (str(dtype), n)
        xs = [torch.tensor(r[key][0], dtype=dtype) for r in results]
        shm = [torch.tensor(r[key][1], dtype=dtype) for r in results]
        gloo = [torch.tensor(r[key][2], dtype=dtype) for r in results]
        assert [r[key][3] for r in results] == [int(n * dtype.itemsize <= LIMIT)] * world  # which path ran
        assert all(torch.equal(s, shm[0]) for s in shm), key           # every rank: the same bits
        if n * dtype.itemsize > LIMIT or world == 2:
            assert torch.equal(shm[0], gloo[0]), key                    # gloo's own result, or a + b
        else:
            in_order = xs[0].float() + xs[1] + xs[2] if dtype == torch.bfloat16 else xs[0] + xs[1] + xs[2]
            assert torch.equal(shm[0], in_order.to(dtype)), key
            torch.testing.assert_close(shm[0], gloo[0], rtol=1e-2 if dtype == torch.bfloat16 else 1e-6, atol=1e-2)
    assert not leaked_segments(pids)


def _rank_one_dies(rank: int, world: int) -> str | None:
    shm = ShmAllReduce(dist.group.WORLD, LIMIT, timeout_s=0.5)
    shm.all_reduce(torch.ones(4))          # both ranks arrive once
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # a worker dies: no clean-up runs in it
    with pytest.raises(ShmAllReduceTimeout) as caught:
        shm.all_reduce(torch.ones(4))
    return str(caught.value)


def test_a_missing_rank_is_named_and_no_segment_outlives_a_killed_rank():
    (message, dead), pids = run_ranks(_rank_one_dies, 2)
    assert dead is None and "rank(s) [1] of 2 did not arrive within 0.5 s" in message and "rank 0 waited" in message
    assert not leaked_segments(pids)  # the name was unlinked once both ranks had mapped it


def test_message_queue_broadcasts_through_a_ring_wakes_sleepers_and_overflows_down_the_pipes():
    """One process plays the writer and two readers (the executor and its workers use the same calls)."""
    writer = MessageQueue(2, chunk_bytes=128, chunks=2)
    readers = [MessageQueue.attach(writer.handle(), i) for i in range(2)]
    writer.unlink()
    assert not leaked_segments([os.getpid()])
    pipes = [mp.Pipe() for _ in range(2)]
    to_readers, at_readers = [a for a, _ in pipes], [b for _, b in pipes]
    nothing = lambda seconds: False  # noqa: E731 - the other channel stays empty
    assert writer.enqueue(b"step 1") and writer.enqueue(b"step 2")
    with pytest.raises(TimeoutError, match=r"reader\(s\) \[0, 1\] did not read"):  # both chunks unread
        writer.enqueue(b"step 3", timeout_s=0.01)
    assert [r.dequeue(nothing) for r in readers] == [b"step 1", b"step 1"]
    broadcast(writer, to_readers, b"step 3")   # the ring wraps to chunk 0; nobody sleeps: no wake-up sent
    assert not any(conn.poll() for conn in at_readers)
    assert [receive(r, conn) for r, conn in zip(readers, at_readers)] == [b"step 2", b"step 2"]
    broadcast(writer, to_readers, b"x" * 200)  # too big for a chunk: a marker, and the bytes down each pipe
    assert [receive(r, conn) for r, conn in zip(readers, at_readers)] == [b"step 3", b"step 3"]
    assert [receive(r, conn) for r, conn in zip(readers, at_readers)] == [b"x" * 200] * 2
    with pytest.raises(TimeoutError, match="reader 1: no message within 0.01 s"):
        readers[1].dequeue(nothing, timeout_s=0.01)
    assert writer.sleeping_readers() == []      # a reader that gave up is awake again

    def sleep_then_write(seconds):   # reader 0 sleeps on its pipe; the writer writes and sees it sleeping
        assert writer.sleeping_readers() == [0]
        broadcast(writer, to_readers, b"step 4")
        return at_readers[0].poll(seconds)
    assert readers[0].dequeue(sleep_then_write) == b"step 4"
    assert at_readers[0].recv_bytes() == b"" and not at_readers[1].poll()  # the wake-up went to reader 0 only
    assert receive(readers[1], at_readers[1]) == b"step 4"
    to_readers[0].close()
    with pytest.raises(EOFError):   # the writer is gone: the reader does not wait for ever
        receive(readers[0], at_readers[0])
    for q in readers + [writer]:
        q.close()
