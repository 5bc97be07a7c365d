"""The multi-process executor: one worker process per tensor-parallel rank, the scheduler in the driver.

``LLM(model=DIR, tensor_parallel_size=N)`` builds one of these in place of the in-process model runner.
Each step the driver flattens the scheduler's output into a :class:`~mini_platform.model_runner.StepInput`,
picks its runtime mode and the graph it replays (``model_runner.dispatch_step``: a full decode graph, the
piecewise graphs of a token count, or none), sends the same bytes to every worker, and waits for rank 0's
logits (every rank computes them; one copy is enough to sample). The collectives inside the forward go over
``torch.distributed`` and are part of the graphs the workers captured (as NCCL calls can be part of a CUDA
graph; the CPU graph records them as functional collectives in a full decode graph, and as the collective custom
ops of ``distributed.parallel_state`` inside a compiled model's pieces). The workers' ``GraphStats`` (rank 0's,
checked equal on every rank at start-up) are the executor's; it counts the steps. The step goes to the workers once,
through a shared-memory :class:`~mini_platform.distributed.shm_broadcast.MessageQueue` (vLLM's
``rpc_broadcast_mq``), or, with ``MINI_PLATFORM_SHM_BROADCAST=0`` or when it is too big for a chunk, down
each worker's pipe; the pipes carry everything else (start-up, rank 0's logits, errors, ``close``).

Failure handling: the driver waits on the workers' pipes *and* their process sentinels with a timeout,
so a worker that raises, crashes or is killed is noticed at once; then every worker is stopped and a
:class:`WorkerError` naming the rank(s) reaches the caller. No worker outlives ``close()``, garbage
collection of the executor, or the driver's exit.
"""
from __future__ import annotations

import dataclasses
import pickle
import signal
import socket
import time
import warnings
import weakref
from multiprocessing.connection import Connection, wait

import torch
import torch.multiprocessing as mp

from .. import envs
from ..distributed.shm_broadcast import MessageQueue, broadcast
from ..kv_cache import KVCacheManager
from ..model_runner import GraphStats, dispatch_step, step_input
from ..scheduler import SchedulerOutput
from .worker import WorkerConfig, worker_main

# After the first failure, how long to keep listening for the other ranks' errors before stopping them.
FAILURE_GRACE_S = 1.0
# What a rank's error says when it failed only because another rank stopped in the middle of a collective.
PEER_LOST_MARKERS = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "pair closure",
                     "left the shared-memory group")


class WorkerError(RuntimeError):
    """A worker process failed or died; the message names its rank."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the rendezvous address of rank 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MultiprocExecutor:
    """Start ``config.world_size`` spawned workers and run steps on them (``execute`` is ``ModelRunner``'s)."""

    queue: MessageQueue | None = None  # the steps' shared-memory broadcast; None: down the pipes

    def __init__(self, config: WorkerConfig) -> None:
        self.timeout_s, self.max_num_seqs = config.timeout_s, config.max_num_seqs
        ctx = mp.get_context("spawn")  # a fresh interpreter per worker: no inherited locks or device state
        init_method = f"tcp://127.0.0.1:{free_port()}"
        self.procs: list[mp.Process] = []
        self.conns: list[Connection] = []
        self.error: WorkerError | None = None
        self.queue = MessageQueue(config.world_size) if envs.shm_broadcast() else None
        handle = None if self.queue is None else self.queue.handle()
        self._finalizer = weakref.finalize(self, _stop_workers, self.procs, self.conns, self.queue)
        for rank in range(config.world_size):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(rank, init_method, config, child, handle),
                               name=f"mini-platform-worker-{rank}", daemon=True)
            proc.start()
            child.close()  # the worker holds the other end; its death closes the pipe
            self.procs.append(proc)
            self.conns.append(parent)
        ready: dict[int, tuple[GraphStats, list[str]]] = {}
        while len(ready) < config.world_size:  # every rank says "ready" once its shard is loaded
            rank, (_, stats, texts) = self._receive("start-up")
            ready[rank] = stats, texts
        if self.queue is not None:
            self.queue.unlink()  # every rank has attached: the name can go (no /dev/shm entry can leak)
        graphs = {rank: _captured(stats) for rank, (stats, _) in sorted(ready.items())}
        if len(set(graphs.values())) > 1:
            self.close()  # a graph replayed on some ranks only would wait forever for the others' collectives
            raise WorkerError(f"the ranks captured different graphs ((mode, decode sizes, piecewise sizes, pieces) "
                              f"per rank: {graphs}); use enforce_eager=True")
        stats, texts = ready[0]
        self.graph_stats = dataclasses.replace(stats, capture_seconds=max(s.capture_seconds for s, _ in ready.values()))
        for text in texts:  # every rank raised the same warnings: say them once
            warnings.warn(f"tensor-parallel worker rank 0: {text}", RuntimeWarning, stacklevel=3)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def execute(self, batch: SchedulerOutput, kv: KVCacheManager) -> torch.Tensor:
        """Run one step on every rank; returns rank 0's fp32 logits ``[R, V]`` (on the CPU)."""
        if self.error is not None:
            raise WorkerError(f"the workers were stopped after an earlier failure: {self.error}")
        if not self._finalizer.alive:
            raise RuntimeError("this executor is closed")
        mode, size = dispatch_step(batch, self.graph_stats, self.max_num_seqs)
        step = step_input(batch, kv)
        data = pickle.dumps(("execute", (step, mode, size)))
        try:
            broadcast(self.queue, self.conns, data)
        except OSError:  # a worker died since the last step: its pipe is broken
            self._fail("a step", {}, timed_out=False)
        except TimeoutError:  # a rank never read an earlier step (the ring has 4 chunks; ranks are in step)
            self._fail("a step", {}, timed_out=True)
        try:
            logits = self._receive("a step")[1][1]
        except KeyboardInterrupt:
            # The step's late answer would be read as the next step's: stop the workers rather than trust them.
            self.error = WorkerError("a step was interrupted (Ctrl+C) and the workers were stopped; "
                                     "build a new LLM to continue")
            self.close()
            raise
        self.graph_stats.count_step(size, len(step.input_ids) if mode == "PIECEWISE" else len(batch.scheduled), mode)
        return logits

    def close(self) -> None:
        """Ask every worker to exit, then stop any that does not (idempotent)."""
        self._finalizer()

    def _receive(self, during: str) -> tuple[int, tuple]:
        """The next message from any worker; raises WorkerError if one failed, died, or all stayed silent."""
        ranks = {conn: rank for rank, conn in enumerate(self.conns)}
        ready = wait(list(ranks) + [p.sentinel for p in self.procs], timeout=self.timeout_s)
        errors = {}
        for conn in (r for r in ready if r in ranks):
            try:
                message = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):  # EOF, or a reset pipe when it died while we were sending
                continue  # died without a word: its exit code tells
            if message[0] == "error":
                errors[ranks[conn]] = message[1]
            elif not errors:  # once a rank has failed, the others' messages no longer matter: keep reading errors
                return ranks[conn], message
        self._fail(during, errors, timed_out=not ready)

    def _fail(self, during: str, errors: dict[int, str], timed_out: bool) -> None:
        """Collect what every rank says about the failure, stop them all, raise one error naming the ranks."""
        deadline = time.monotonic() + FAILURE_GRACE_S
        dead = {}
        while len(errors) + len(dead) < len(self.procs):
            for rank, (proc, conn) in enumerate(zip(self.procs, self.conns)):
                if rank in errors or rank in dead:
                    continue
                try:
                    if conn.poll():
                        message = pickle.loads(conn.recv_bytes())
                        if message[0] == "error":
                            errors[rank] = message[1]
                        continue
                except (EOFError, OSError):
                    pass
                if proc.exitcode is not None:
                    dead[rank] = proc.exitcode
            if timed_out or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for proc in self.procs:  # survivors may be stuck in a collective with the dead rank: no polite close
            if proc.is_alive():
                proc.terminate()
        self.close()
        lines = [f"worker rank {rank} (pid {self.procs[rank].pid}) died unexpectedly with {_exit_reason(code)}"
                 for rank, code in dead.items()]
        # The cause first: a rank whose collective lost its peer failed because another rank did. Otherwise
        # in the order they reported (a dict keeps it).
        order = sorted(errors, key=lambda rank: _is_consequence(errors[rank]))
        lines += [f"worker rank {rank} failed: {_last_line(errors[rank])}\n{errors[rank]}" for rank in order]
        if timed_out:
            lines.insert(0, f"no worker answered within {self.timeout_s:g} s")
        if during == "start-up" and dead and not errors:  # died before worker_main could report anything
            lines.append("the workers' stderr above says why; a script that builds the LLM needs `if __name__ == \"__main__\":` "
                         "around it, because each spawned worker imports the script again")
        self.error = WorkerError(f"tensor-parallel execution failed during {during}; all workers were stopped.\n"
                                 + "\n".join(lines))
        raise self.error


def _captured(stats: GraphStats) -> tuple:
    """What a rank captured, which every rank must have captured alike."""
    return (stats.cudagraph_mode, tuple(stats.capture_sizes), tuple(stats.piecewise_capture_sizes), stats.num_pieces)


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def _is_consequence(traceback_text: str) -> bool:
    """Whether a rank's error says only that a peer went away (in the words of gloo's TCP transport)."""
    return any(marker in _last_line(traceback_text) for marker in PEER_LOST_MARKERS)


def _exit_reason(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"


def _stop_workers(procs: list[mp.Process], conns: list[Connection], queue: MessageQueue | None,
                  wait_s: float = 5.0) -> None:
    """Ask each live worker to close, wait, then terminate and finally kill the stragglers; free the queue."""
    data = pickle.dumps(("close", None))
    for proc, conn in zip(procs, conns):
        if proc.is_alive():
            try:
                conn.send_bytes(data)
            except OSError:
                pass
    deadline = time.monotonic() + wait_s
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for stop in ("terminate", "kill"):
        for proc in (p for p in procs if p.is_alive()):
            getattr(proc, stop)()
            proc.join(2.0)
    for conn in conns:
        conn.close()
    if queue is not None:
        queue.close()
