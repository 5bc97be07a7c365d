"""What tensor and expert parallelism cost in communication, per decode token, and what gloo delivers here.

Part 1 is arithmetic on a model's config (no measurement): the bytes each rank *sends* per decode token
for one forward, counted as ring algorithms (an all-reduce of S bytes sends
``2 (N-1)/N S`` per rank, an all-gather or reduce-scatter ``(N-1)/N S``), and uniform expert routing
for the all-to-all (a share ``(N-1)/N`` of each token's ``top_k`` rows goes to another rank). It follows
mini_platform's layout: TP = one all-reduce after attention and one after the MLP (or the TP-split
experts), one for the vocabulary-parallel embedding, an all-gather of fp32 logits; EP = the same
attention all-reduce, then per MoE layer either all-to-all out and back ("alltoall") or all-gather +
reduce-scatter ("allgather"), plus the all-gather that returns every rank's token slice.

Part 2 measures ``torch.distributed.all_reduce`` over gloo between 2 processes on this machine
(loopback TCP), and sets the latency of one decode all-reduce beside the number a TP step needs.

Run: ``python benchmarks/collectives.py [--model DIR] [--world-sizes 2 4 8] [--no-measure]``.
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
SIZES = [2 ** k for k in (10, 13, 16, 19, 22, 24)]  # all-reduce payloads: 1 KiB .. 16 MiB (8 KiB = one bf16 token)


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


def _measure(rank: int, world: int, port: int, iters: int, results: dict) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        for size in SIZES:
            x = torch.ones(size // 4)
            for _ in range(3):
                dist.all_reduce(x)
            times = []
            for _ in range(iters):
                start = time.perf_counter()
                dist.all_reduce(x)
                times.append(time.perf_counter() - start)
            if rank == 0:
                results[size] = statistics.median(times)
    finally:
        dist.destroy_process_group()


def measure_gloo(iters: int) -> dict[int, float]:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_measure, args=(2, port, iters, results), nprocs=2, join=True)
        return dict(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a checkpoint directory: use its config.json instead of the presets")
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--no-measure", action="store_true", help="only the arithmetic")
    args = parser.parse_args()
    print(f"machine: {hostinfo.describe()}")
    models = ({Path(args.model).name: json.loads((Path(args.model) / "config.json").read_text())} if args.model
              else PRESETS)
    for name, cfg in models.items():
        print_volume_table(name, geometry(cfg), args.world_sizes)
    if args.no_measure:
        return
    print(f"\ngloo all_reduce, 2 processes on this machine (loopback TCP), median of {args.iters} after 3 warm-ups:")
    print(f"{'payload':>10} {'latency us':>11} {'bus GB/s':>9}")
    timings = measure_gloo(args.iters)
    for size, seconds in sorted(timings.items()):
        print(f"{size / 1024:>8.0f}Ki {seconds * 1e6:>11.1f} {2 * (2 - 1) / 2 * size / seconds / 1e9:>9.3f}")
    g = geometry(PRESETS["Llama-3-8B"])
    payload = g["H"] * 2  # one token's hidden state in bf16
    count = 2 * g["L"] + 1
    nearest = min(timings, key=lambda size: abs(size - payload))
    print(f"\nA TP=2 decode step of Llama-3-8B with one token needs {count} all-reduces of {payload // 1024} KiB "
          f"(+ one logits all-gather). At the measured {timings[nearest] * 1e6:.0f} us per {nearest // 1024} KiB "
          f"all-reduce, that is {count * timings[nearest] * 1e3:.1f} ms of communication per token over gloo here: "
          "at this size latency, not bandwidth, sets the cost.")


if __name__ == "__main__":
    main()
