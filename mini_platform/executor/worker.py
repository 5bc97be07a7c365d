"""One worker process per rank: join the process group, build this rank's shard of the model, then run
every step the driver sends until it says ``close``.

Messages over the pipe to the driver: ``("ready",)`` once loaded, ``("result", logits)`` from rank 0
after each step, ``("error", traceback_text)`` from any rank that fails (it then exits).
"""
from __future__ import annotations

import pickle
import signal
import traceback
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection

import torch
import torch.distributed as dist

from .. import platforms, plugins
from ..distributed.parallel_state import destroy_model_parallel, init_model_parallel
from ..model import load_model
from ..model_runner import ModelRunner


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


def init_worker(rank: int, init_method: str, config: WorkerConfig) -> ModelRunner:
    """Join the process group, build the TP/EP groups, load this rank's shard; returns its model runner."""
    platform = platforms.current_platform
    plugins.load_general_plugins()
    device = torch.device("cpu") if platform.device_type == "cpu" else torch.device(platform.device_type, rank)
    if device.type != "cpu":  # one device per rank, current before the group exists (NCCL/HCCL bind to it);
        platform.device_module().set_device(device)  # on Ascend this imports torch_npu, registering hccl
    dist.init_process_group(platform.dist_backend, init_method=init_method, rank=rank,
                            world_size=config.world_size, timeout=timedelta(seconds=config.timeout_s))
    init_model_parallel(config.world_size, config.enable_expert_parallel, device, config.moe_comm)
    model = load_model(config.model, dtype=config.dtype, device=device, max_positions=config.max_model_len)
    return ModelRunner(model, config.num_blocks, config.block_size, config.backend, max_num_seqs=config.max_num_seqs,
                       max_num_batched_tokens=config.max_num_batched_tokens, max_model_len=config.max_model_len)


def _send(conn: Connection, message: tuple) -> None:
    conn.send_bytes(pickle.dumps(message))


def worker_main(rank: int, init_method: str, config: WorkerConfig, conn: Connection) -> None:
    """The body of worker process ``rank``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the driver's to handle; it stops the workers
    try:
        runner = init_worker(rank, init_method, config)
        _send(conn, ("ready",))
        while True:
            method, step = pickle.loads(conn.recv_bytes())
            if method == "close":
                break
            logits = runner.execute_step(step)
            if rank == 0:
                _send(conn, ("result", logits.cpu()))
    except EOFError:  # the driver is gone: nobody to serve
        return
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the driver, with this rank's name
        try:
            _send(conn, ("error", "".join(traceback.format_exception(exc))))
        except OSError:
            pass
        raise SystemExit(1) from None
    destroy_model_parallel()
    dist.destroy_process_group()
