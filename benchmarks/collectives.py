"""What tensor and expert parallelism cost in communication, per decode token, and what gloo delivers here.

Part 1 is arithmetic on a model's config (no measurement): the bytes each rank *sends* per decode token
for one forward, counted as ring algorithms (an all-reduce of S bytes sends
``2 (N-1)/N S`` per rank, an all-gather or reduce-scatter ``(N-1)/N S``), and uniform expert routing
for the all-to-all (a share ``(N-1)/N`` of each token's ``top_k`` rows goes to another rank). It follows
mini_platform's layout: TP = one all-reduce after attention and one after the MLP (or the TP-split
experts), one for the vocabulary-parallel embedding, an all-gather of fp32 logits; EP = the same
attention all-reduce, then per MoE layer either all-to-all out and back ("alltoall") or all-gather +
reduce-scatter ("allgather"), plus the all-gather that returns every rank's token slice.

Part 2 measures the all-reduce between 2 processes on this machine two ways in one run: gloo
(``torch.distributed.all_reduce``, loopback TCP) and the shared-memory all-reduce of
``mini_platform/distributed/shm_allreduce.py`` (which the CPU communicator uses up to 1 MiB), by size, and
sets the latency of one decode all-reduce beside the number a TP step needs.

Part 3 (``--engine``) runs the engine at TP=2 on a small random Llama and times its decode steps with the
shared-memory all-reduce on and off (``MINI_PLATFORM_CPU_SHM_ALLREDUCE``) and the step inputs broadcast
through shared memory or pickled down each worker's pipe (``MINI_PLATFORM_SHM_BROADCAST``), and times the
broadcast alone (driver to 2 workers and an acknowledgement back, no model).

Run: ``python benchmarks/collectives.py [--model DIR] [--world-sizes 2 4 8] [--no-measure] [--engine]``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402

# Geometry of two public checkpoints (their config.json on the Hugging Face Hub), bf16.
PRESETS = {
    "Llama-3-8B": dict(hidden_size=4096, num_hidden_layers=32, vocab_size=128256),
    "Mixtral-8x7B": dict(hidden_size=4096, num_hidden_layers=32, vocab_size=32000, num_local_experts=8,
                         num_experts_per_tok=2),
}
SIZES = [2 ** k for k in (10, 13, 16, 19, 20, 22, 24)]  # all-reduce payloads: 1 KiB .. 16 MiB (8 KiB = one bf16 token)
SHM_SIZES_UP_TO = 1 << 22  # the benchmark's shared-memory buffer (4 MiB); the engine's limit is 1 MiB


def geometry(cfg: dict) -> dict:
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or 0
    return dict(H=cfg["hidden_size"], L=cfg["num_hidden_layers"], V=cfg["vocab_size"], E=experts,
                K=cfg.get("num_experts_per_tok", 0) if experts else 0)


def bytes_per_token(g: dict, n: int, scheme: str, elem: int = 2) -> dict[str, float]:
    """Bytes one rank sends per decode token, by collective, for ``scheme`` in tp / ep-alltoall / ep-allgather."""
    h, ring = g["H"] * elem, (n - 1) / n
    out = {"embedding all-reduce": 2 * ring * h, "logits all-gather (fp32)": ring * g["V"] * 4,
           "attention all-reduce": g["L"] * 2 * ring * h}
    if scheme == "tp":
        out["MLP / experts all-reduce"] = g["L"] * 2 * ring * h
    elif scheme == "ep-alltoall":   # rows out (with the int32 expert id) and back; the weights stay home
        out["all-to-all out + back"] = g["L"] * g["K"] * ring * (2 * h + 4)
        out["slice all-gather"] = g["L"] * ring * h
    else:                           # ep-allgather: hidden + weights + ids gathered, outputs reduce-scattered
        out["all-gather + reduce-scatter"] = g["L"] * ring * (2 * h + 8 * g["K"])
        out["slice all-gather"] = g["L"] * ring * h
    return out


def print_volume_table(name: str, g: dict, world_sizes: list[int]) -> None:
    schemes = ["tp"] + (["ep-alltoall", "ep-allgather"] if g["E"] else [])
    print(f"\n{name}: hidden {g['H']}, {g['L']} layers, vocab {g['V']}"
          + (f", {g['E']} experts, top-{g['K']}" if g["E"] else "") + "; bf16 activations")
    print(f"{'ranks':>5}  {'scheme':<13}{'KiB sent per rank per decode token':>36}   (of which logits)")
    for n in world_sizes:
        for scheme in schemes:
            parts = bytes_per_token(g, n, scheme)
            print(f"{n:>5}  {scheme:<13}{sum(parts.values()) / 1024:>36.1f}   "
                  f"({parts['logits all-gather (fp32)'] / 1024:.1f})")
    if g["E"]:
        print("EP here keeps tensor-parallel attention, so every rank holds every token and EP pays the exchange\n"
              "plus the slice all-gather: in this layout it saves expert memory and expert FLOPs per rank, not bytes.\n"
              "With data-parallel attention (each rank its own tokens, vLLM's DP + EP) the attention all-reduce and\n"
              "the slice all-gather both disappear and only the exchange is left.")


def _median_time(fn, iters: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _measure(rank: int, world: int, port: int, iters: int, results: dict) -> None:
    from mini_platform.distributed.shm_allreduce import ShmAllReduce
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    shm = ShmAllReduce(dist.group.WORLD, SHM_SIZES_UP_TO)
    try:
        for size in SIZES:
            x = torch.ones(size // 4)
            gloo = _median_time(lambda: dist.all_reduce(x), iters)
            fast = _median_time(lambda: shm.all_reduce(x), iters) if size <= SHM_SIZES_UP_TO else None
            if rank == 0:
                results[size] = (gloo, fast)
    finally:
        shm.close()
        dist.destroy_process_group()


def measure_all_reduce(iters: int) -> dict[int, tuple[float, float | None]]:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_measure, args=(2, port, iters, results), nprocs=2, join=True)
        return dict(results)


# -- part 3: the engine at TP=2 ----------------------------------------------------------------------------
ENGINE_MODEL = dict(hidden_size=512, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8,
                    num_key_value_heads=4, head_dim=64, vocab_size=1024)
DECODE_BATCH = 8  # each all-reduce: 8 tokens x 512 x fp32 = 16 KiB


def time_decode_steps(model: str, env: dict[str, str], steps: int) -> float:
    """Median seconds of one TP=2 decode step (every request decoding) under the variables ``env``."""
    import os

    from mini_platform import LLMEngine, SamplingParams
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # read by the driver and inherited by the spawned workers
    try:
        engine = LLMEngine(model, tensor_parallel_size=2)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    try:
        params = SamplingParams(temperature=0, max_tokens=steps + 8, ignore_eos=True)
        for i in range(DECODE_BATCH):
            engine.add_request([3 + i, 5, 7, 11], params)
        for _ in range(4):  # the prefill, then a few decode steps to warm up
            engine.step()
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            engine.step()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        engine.close()


def _echo_worker(rank: int, conn, handle) -> None:
    import pickle

    from mini_platform.distributed.shm_broadcast import MessageQueue, receive
    queue = None if handle is None else MessageQueue.attach(handle, rank)
    while pickle.loads(receive(queue, conn)) is not None:
        conn.send_bytes(b"ok")


def time_step_broadcast(step_bytes: object, iters: int = 500) -> dict[str, float]:
    """Median seconds for the driver to get one pickled step to 2 workers and an acknowledgement back from
    each: down each worker's pipe (the executor before) vs once through the shared-memory queue (now)."""
    import pickle

    from mini_platform.distributed.shm_broadcast import MessageQueue, broadcast
    ctx = mp.get_context("spawn")
    out = {}
    for way in ("pipes", "shm queue"):
        queue = MessageQueue(2) if way == "shm queue" else None
        pipes = [ctx.Pipe() for _ in range(2)]
        procs = [ctx.Process(target=_echo_worker, args=(r, pipes[r][1], queue and queue.handle()), daemon=True)
                 for r in range(2)]
        for p in procs:
            p.start()

        conns = [parent for parent, _ in pipes]

        def step():
            broadcast(queue, conns, pickle.dumps(step_bytes))
            for conn in conns:
                conn.recv_bytes()
        try:
            out[way] = _median_time(step, iters)
        finally:
            for parent, _ in pipes:
                parent.send_bytes(pickle.dumps(None))
            for p in procs:
                p.join(10)
            if queue is not None:
                queue.close()
    return out


def print_engine_comparison(steps: int) -> None:
    import pickle
    import tempfile

    from mini_platform.model import make_tiny_checkpoint
    from mini_platform.model_runner import StepInput
    with tempfile.TemporaryDirectory() as tmp:
        model = str(make_tiny_checkpoint(Path(tmp) / "llama", "llama", **ENGINE_MODEL))
        configs = {"gloo all-reduce, pipes": {"MINI_PLATFORM_CPU_SHM_ALLREDUCE": "0", "MINI_PLATFORM_SHM_BROADCAST": "0"},
                   "shm all-reduce, pipes": {"MINI_PLATFORM_CPU_SHM_ALLREDUCE": "1", "MINI_PLATFORM_SHM_BROADCAST": "0"},
                   "shm all-reduce, shm queue": {"MINI_PLATFORM_CPU_SHM_ALLREDUCE": "1", "MINI_PLATFORM_SHM_BROADCAST": "1"}}
        times = {name: float("inf") for name in configs}
        for _ in range(2):  # two rounds, interleaved, the better of each: the load of a shared machine drifts
            for name, env in configs.items():
                times[name] = min(times[name], time_decode_steps(model, env, steps))
    base = times["gloo all-reduce, pipes"]
    print(f"\nTP=2 decode step, Llama hidden {ENGINE_MODEL['hidden_size']}, {ENGINE_MODEL['num_hidden_layers']} layers, "
          f"{DECODE_BATCH} requests decoding (all-reduces of {DECODE_BATCH * ENGINE_MODEL['hidden_size'] * 4 // 1024} KiB), "
          f"best of 2 rounds of the median of {steps} steps:")
    for name, seconds in times.items():
        print(f"  {name:<28}{seconds * 1e3:>8.2f} ms   {base / seconds:>5.2f}x the gloo + pipes step")
    step = StepInput(list(range(64)), list(range(64)), list(range(64)), [list(range(32))] * 64, [100] * 64,
                     [1] * 64, list(range(64)), 1)   # a decode step of 64 requests with 32 blocks each
    prefill = StepInput(list(range(2048)), list(range(2048)), list(range(2048)), [list(range(i, i + 64)) for i in range(64)],
                        [100] * 64, [32] * 64, list(range(64)), 32)  # 64 requests prefilling 32 tokens each
    for name, message in (("a decode step of 64 requests", step), ("a 2048-token prefill step", prefill)):
        echo = time_step_broadcast(("execute", (message, None)))
        print(f"{name} ({len(pickle.dumps(message)) / 1024:.1f} KiB pickled) to 2 workers and an ack back: "
              f"pipes {echo['pipes'] * 1e6:.0f} us, shm queue {echo['shm queue'] * 1e6:.0f} us "
              f"({echo['pipes'] / echo['shm queue']:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a checkpoint directory: use its config.json instead of the presets")
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--no-measure", action="store_true", help="only the arithmetic")
    parser.add_argument("--engine", action="store_true", help="also time TP=2 decode steps and the step broadcast")
    parser.add_argument("--steps", type=int, default=40, help="decode steps timed per engine configuration")
    args = parser.parse_args()
    print(f"machine: {hostinfo.describe()}")
    models = ({Path(args.model).name: json.loads((Path(args.model) / "config.json").read_text())} if args.model
              else PRESETS)
    for name, cfg in models.items():
        print_volume_table(name, geometry(cfg), args.world_sizes)
    if args.no_measure:
        return
    print(f"\nall_reduce of fp32, 2 processes on this machine, median of {args.iters} after 3 warm-ups:")
    print(f"{'payload':>10} {'gloo us':>9} {'gloo GB/s':>10} {'shm us':>8} {'gloo / shm':>11}")
    both = measure_all_reduce(args.iters)
    for size, (gloo, shm) in sorted(both.items()):
        fast = f"{shm * 1e6:>8.1f} {gloo / shm:>10.1f}x" if shm else f"{'-':>8} {'-':>11}"
        print(f"{size / 1024:>8.0f}Ki {gloo * 1e6:>9.1f} {size / gloo / 1e9:>10.3f} {fast}")
    print("shm = mini_platform's shared-memory all-reduce (one copy in, a barrier on generation flags, the sum "
          "in rank order); the CPU communicator uses it up to 1 MiB and gloo above")
    timings = {size: gloo for size, (gloo, _) in both.items()}
    g = geometry(PRESETS["Llama-3-8B"])
    payload = g["H"] * 2  # one token's hidden state in bf16
    count = 2 * g["L"] + 1
    nearest = min(timings, key=lambda size: abs(size - payload))
    print(f"\nA TP=2 decode step of Llama-3-8B with one token needs {count} all-reduces of {payload // 1024} KiB "
          f"(+ one logits all-gather). At the measured {timings[nearest] * 1e6:.0f} us per {nearest // 1024} KiB "
          f"all-reduce, that is {count * timings[nearest] * 1e3:.1f} ms of communication per token over gloo here: "
          "at this size latency, not bandwidth, sets the cost.")
    if args.engine:
        print_engine_comparison(args.steps)


if __name__ == "__main__":
    main()
