"""One worker process per rank: join the process group, build this rank's shard of the model (and its
graphs, unless eager: full decode graphs, or the model compiled and its pieces captured, as the engine's
``compilation_config`` says), then run every step the driver sends until it says ``close``.

Messages over the pipe to the driver: ``("ready", graph_stats, warnings)`` once loaded (the runner's
:class:`~mini_platform.model_runner.GraphStats`: what it captured, nothing when eager; the texts of the warnings
raised while building), ``("result", logits)`` from rank 0 after each step, ``("error", traceback_text)`` from any
rank that fails (it then exits). From the driver: ``("execute", (step, runtime_mode, size))`` (the driver picks
the runtime mode and the graph, the same on every rank, since a graph's collectives must meet the same graph's on
the other ranks), through the shared-memory queue when there is one (else, or when it overflows, down the pipe),
and ``("close", None)`` down the pipe.
"""
from __future__ import annotations

import contextlib
import os
import pickle
import signal
import traceback
import warnings
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection

import torch
import torch.distributed as dist

from .. import platforms, plugins
from ..compilation.config import CompilationConfig
from ..distributed.parallel_state import destroy_model_parallel, init_model_parallel
from ..distributed.shm_broadcast import Handle, MessageQueue, receive
from ..model import load_model
from ..model_runner import ModelRunner, build_model_runner


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker needs to build its model runner (the driver's engine config, picklable)."""
    model: str
    world_size: int
    dtype: torch.dtype
    num_blocks: int
    block_size: int
    backend: str | None = None  # kernel backend; None = the platform's
    max_num_seqs: int = 64      # these three size the runner's input buffers
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None
    enable_expert_parallel: bool = False
    moe_comm: str = "alltoall"  # how MoE layers exchange tokens under EP (see moe_dispatch)
    timeout_s: float = 300.0    # a collective that waits longer than this fails instead of hanging
    enforce_eager: bool = True  # False: capture decode graphs (the collectives inside them)
    capture_sizes: tuple[int, ...] | None = None  # None = vLLM's default schedule
    compilation_config: CompilationConfig | None = None  # the engine's (cudagraph_mode); None: as enforce_eager says
    emulated_torch_npu: bool = False  # the driver runs under emulated_torch_npu(): so does each worker


def init_worker(rank: int, init_method: str, config: WorkerConfig) -> ModelRunner:
    """Join the process group, build the TP/EP groups, load this rank's shard and capture its graphs (as
    ``config.enforce_eager`` and ``config.compilation_config`` say); returns its model runner."""
    platform = platforms.current_platform
    plugins.load_general_plugins()
    device = torch.device("cpu") if platform.device_type == "cpu" else torch.device(platform.device_type, rank)
    if device.type != "cpu":  # one device per rank, current before the group exists (NCCL/HCCL bind to it);
        platform.device_module().set_device(device)  # on Ascend this imports torch_npu, registering hccl
    else:  # the ranks share the cores: more threads per rank than cores per rank spin against each other
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // config.world_size))
    dist.init_process_group(platform.dist_backend, init_method=init_method, rank=rank,
                            world_size=config.world_size, timeout=timedelta(seconds=config.timeout_s))
    init_model_parallel(config.world_size, config.enable_expert_parallel, device, config.moe_comm,
                        timedelta(seconds=config.timeout_s))
    model = load_model(config.model, dtype=config.dtype, device=device, max_positions=config.max_model_len)
    return build_model_runner(
        model, config.num_blocks, config.block_size, config.backend, platform=platform,
        enforce_eager=config.enforce_eager, capture_sizes=config.capture_sizes, max_num_seqs=config.max_num_seqs,
        max_num_batched_tokens=config.max_num_batched_tokens, max_model_len=config.max_model_len,
        compilation_config=config.compilation_config)


def _send(conn: Connection, message: tuple) -> None:
    conn.send_bytes(pickle.dumps(message))


def worker_main(rank: int, init_method: str, config: WorkerConfig, conn: Connection,
                queue: Handle | None = None) -> None:
    """The body of worker process ``rank``; ``queue``: the driver's step broadcast, if it has one."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the driver's to handle; it stops the workers
    try:
        with contextlib.ExitStack() as stack:
            if config.emulated_torch_npu:  # for the worker's whole life; refused where a real torch_npu exists
                from ..ascend.emulation import emulated_torch_npu
                stack.enter_context(emulated_torch_npu())
            _serve(rank, init_method, config, conn, queue)
    except EOFError:  # the driver is gone: nobody to serve
        return
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the driver, with this rank's name
        try:
            _send(conn, ("error", "".join(traceback.format_exception(exc))))
        except OSError:
            pass
        destroy_model_parallel()  # a peer waiting in a shared-memory all-reduce learns that this rank left
        raise SystemExit(1) from None


def _serve(rank: int, init_method: str, config: WorkerConfig, conn: Connection, handle: Handle | None) -> None:
    """Build this rank's runner, say ready, run steps until ``close``."""
    queue = None if handle is None else MessageQueue.attach(handle, rank)
    with warnings.catch_warnings(record=True) as caught:  # the driver shows them once, not once per rank
        warnings.simplefilter("always")
        runner = init_worker(rank, init_method, config)
    _send(conn, ("ready", runner.graph_stats, [str(w.message) for w in caught]))
    while True:
        method, args = pickle.loads(receive(queue, conn))  # EOFError: the driver is gone
        if method == "close":
            break
        step, mode, size = args
        logits = runner.execute_piecewise(step, size) if mode == "PIECEWISE" else runner.execute_step(step, size)
        if rank == 0:
            _send(conn, ("result", logits.cpu()))
    destroy_model_parallel()
    dist.destroy_process_group()
