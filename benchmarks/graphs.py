"""Decode graphs versus eager: step time at several batch sizes, and the padding the capture schedule costs.

Run: ``python benchmarks/graphs.py`` (under a minute on 2 cores). One run, ratios printed with the machine.

- CPU, tiny random Llama (2 layers, hidden 64): one decode step (``ModelRunner.execute``: fill the buffers,
  run the model, compute the logits) timed with the CPU graph replayed and eagerly, at ``--sizes``, the
  two alternating step by step; medians of ``--repeats``.
  The CPU graph replays the recorded nodes from Python (aten calls, and each numba kernel call as one node), so what
  it saves is the model's Python code (modules, kernel dispatch, argument checks, torch/numpy conversions), not kernel
  launches. Without numba (``MINI_PLATFORM_CPU_COMPILED=0``) its decode attention is the torch kernel's fixed-shape
  form, which reads every block of the block-table width where the eager kernel reads only ``seq_len`` keys.
- Padding: the decode batch sizes of trace S1 (benchmarks/throughput.py) under continuous batching,
  padded up to vLLM's default schedule, to powers of two and to every size (no padding).
- The cudagraph modes (``compilation_config={"cudagraph_mode": ...}``), CPU, tiny Llama: capture time, steps per
  runtime mode, and the launches of a decode step and of a step with a prefill, per mode. A launch is what a GPU
  would be sent: each graph replay counts 1, each aten operation dispatched outside a replay counts 1 (attention
  between piecewise graphs, and everything in an eager step). Counted with a ``TorchDispatchMode``: no timing.
- NVIDIA GPU only (``torch.cuda.is_available()``): CUDA graph versus eager decode steps with the Triton
  kernels at batch 1, 8 and 32 for the tiny model and a ~100M-parameter one, next to SGLang's published
  1.3x at batch 1 (PR #1401: Llama-3-8B, 107.79 -> 141.63 tok/s). Not run on a machine without a GPU.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import warnings
import tempfile
import time
from pathlib import Path
from typing import Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from mini_platform import LLM, SamplingParams
from mini_platform.compilation import attention_op
from mini_platform.compilation.config import CUDAGRAPH_MODES
from mini_platform.ops import graph as cpu_graph
from mini_platform.compilation.capture_sizes import decode_capture_sizes, dispatch_graph
from mini_platform.model import make_tiny_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo and throughput
import hostinfo  # noqa: E402
from throughput import make_trace  # noqa: E402

SGLANG_BS1 = (107.79, 141.63)  # tok/s without / with CUDA graph, SGLang PR #1401 (Llama-3-8B, batch 1)
MODEL_100M = dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                  num_attention_heads=12, num_key_value_heads=4, head_dim=64, max_position_embeddings=1024)


def decode_step(llm: LLM, batch_size: int):
    """A decode step of ``batch_size`` requests (prompts of 32 tokens, prefilled first), ready to run again
    and again (same slots, same inputs)."""
    engine = llm.engine
    for rid in list(engine.requests):
        engine.abort(rid)
    for i in range(batch_size):
        engine.add_request([3 + (i + j) % 200 for j in range(32)], SamplingParams(temperature=0, max_tokens=1000))
    while True:
        batch = engine.scheduler.schedule()
        logits = engine.runner.execute(batch, engine.kv)
        engine.scheduler.update(batch, logits.argmax(-1).tolist())
        if all(s.num_new_tokens == 1 for s in batch.scheduled) and len(batch.scheduled) == batch_size:
            return engine.scheduler.schedule()


def step_seconds(llm: LLM, batch) -> float:
    start = time.perf_counter()
    llm.engine.runner.execute(batch, llm.engine.kv)
    if llm.engine.model.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def compare(model: Path, sizes: list[int], repeats: int, **options) -> None:
    """Median decode-step time, eager and graph runs alternating (so a change in machine load hits both)."""
    eager = LLM(model, enforce_eager=True, **options)
    graphed = LLM(model, enforce_eager=False, **options)
    stats = graphed.engine.stats()
    print(f"  captured {len(stats['cudagraph_capture_sizes'])} graphs in {stats['graph_capture_seconds']:.2f} s")
    for size in sizes:
        steps = (decode_step(eager, size), decode_step(graphed, size))
        times = ([], [])
        for _ in range(repeats):
            times[0].append(step_seconds(eager, steps[0]))
            times[1].append(step_seconds(graphed, steps[1]))
        t_eager, t_graph = (sorted(t)[len(t) // 2] for t in times)
        padded = dispatch_graph([1] * size, stats["cudagraph_capture_sizes"])
        print(f"  batch {size:3d} (graph of {padded}): eager {t_eager * 1e3:7.2f} ms, graph {t_graph * 1e3:7.2f} ms "
              f"-> eager / graph {t_eager / t_graph:.2f}x")


def decode_batch_sizes(model: Path, trace: list[tuple[list[int], int]], max_num_seqs: int) -> list[int]:
    """The batch size of every decode-only step while serving ``trace`` with continuous batching."""
    llm = LLM(model, max_num_seqs=max_num_seqs, enable_prefix_caching=False)
    engine, sizes = llm.engine, []
    execute = engine.runner.execute

    def recording(batch, kv):
        if all(s.num_new_tokens == 1 for s in batch.scheduled):
            sizes.append(len(batch.scheduled))
        return execute(batch, kv)

    engine.runner.execute = recording
    for prompt, output_len in trace:
        engine.add_request(prompt, SamplingParams(temperature=0, max_tokens=output_len, ignore_eos=True))
    while engine.has_unfinished_requests():
        engine.step()
    return sizes


def padding_report(sizes: list[int], max_num_seqs: int) -> None:
    schedules = {
        "vLLM default": decode_capture_sizes(max_num_seqs, 10 ** 9),
        "powers of two": [2 ** i for i in range(max_num_seqs.bit_length() + 1)],
        "every size": list(range(1, max_num_seqs + 1)),
    }
    real = sum(sizes)
    for name, schedule in schedules.items():
        padded = sum(dispatch_graph([1] * n, schedule) for n in sizes)
        print(f"  {name:14s} {len(schedule):3d} graphs: {padded - real:6d} padding rows on {real} real "
              f"-> {100 * (padded - real) / real:5.1f} % extra rows")


class LaunchCounter(TorchDispatchMode):
    """Counts the aten operations dispatched while it is active."""

    def __init__(self) -> None:
        super().__init__()
        self.launches = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        self.launches += 1
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def counting_launches(runner) -> Iterator[LaunchCounter]:
    """Count one step's launches: aten ops run eagerly, 1 per CPU graph replay. A compiled (piecewise) model runs
    with the counter switched off (TorchDynamo would trace it again under a dispatch mode); its eager attention,
    which reads the forward context, is counted with the counter back on."""
    counter = LaunchCounter()
    replay, get_context = cpu_graph.Graph.replay, attention_op.get_forward_context

    def counted_replay(graph):
        counter.launches += 1
        with _disable_current_modes():
            replay(graph)

    class CountedAttention:
        def __init__(self, attention):
            self.attention = attention

        def __call__(self, *args):
            with counter:
                return self.attention(*args)

        def mla(self, *args):
            with counter:
                return self.attention.mla(*args)

    def counted_context():
        context = get_context()
        return dataclasses.replace(context, attention=CountedAttention(context.attention))

    piecewise = runner.piecewise
    if piecewise is not None:
        run = piecewise.run
        piecewise.run = lambda *args: _uncounted(run, *args)
    cpu_graph.Graph.replay, attention_op.get_forward_context = counted_replay, counted_context
    try:
        with counter:
            yield counter
    finally:
        cpu_graph.Graph.replay, attention_op.get_forward_context = replay, get_context
        if piecewise is not None:
            del piecewise.run


def _uncounted(fn, *args):
    with _disable_current_modes():
        return fn(*args)


def launches_per_step(llm: LLM, prompts: list[list[int]], max_tokens: int = 6) -> dict[str, list[int]]:
    """Serve ``prompts`` greedily; the launches of each step, grouped as ``decode`` (every request one token) or
    ``prefill`` (a step with a prompt or a chunk of one)."""
    engine, steps = llm.engine, {"decode": [], "prefill": []}
    execute = engine.runner.execute

    def counted(batch, kv):
        with counting_launches(engine.runner) as counter:
            logits = execute(batch, kv)
        kind = "decode" if all(s.num_new_tokens == 1 for s in batch.scheduled) else "prefill"
        steps[kind].append(counter.launches)
        return logits

    engine.runner.execute = counted
    try:
        llm.generate(prompts, SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True))
    finally:
        del engine.runner.execute
    return steps


def modes_report(model: Path, prompts: list[list[int]], modes=tuple(CUDAGRAPH_MODES), **options) -> dict[str, dict]:
    """Per cudagraph mode (NONE first: the others are compared with it): capture seconds, graphs captured, steps per
    runtime mode and the mean launches of a decode step and of a prefill step on ``prompts`` (each mode's engine
    built fresh)."""
    report = {}
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # FULL runs as FULL_AND_PIECEWISE, and says so
            llm = LLM(model, compilation_config={"cudagraph_mode": mode}, **options)
        steps = launches_per_step(llm, prompts)
        stats = llm.engine.stats()
        report[mode] = {"runs_as": stats["cudagraph_mode"], "capture_seconds": stats["graph_capture_seconds"],
                        "graphs": stats["graphs_captured"], "pieces": stats["num_pieces"],
                        "steps": stats["steps_by_mode"],
                        **{f"{kind}_launches": sum(v) / len(v) for kind, v in steps.items() if v}}
    return report


def print_modes_report(report: dict[str, dict]) -> None:
    eager = report["NONE"]
    print(f"  {'mode':19s} {'runs as':19s} {'capture':>8s} {'graphs F/P':>10s} {'steps N/P/F':>12s} "
          f"{'launches/decode step':>21s} {'launches/prefill step':>22s}")
    for mode, r in report.items():
        steps = "/".join(str(r["steps"][m]) for m in ("NONE", "PIECEWISE", "FULL"))
        graphs = f"{r['graphs']['FULL']}/{r['graphs']['PIECEWISE']}"
        print(f"  {mode:19s} {r['runs_as']:19s} {r['capture_seconds']:7.2f}s {graphs:>10s} {steps:>12s} "
              f"{r['decode_launches']:8.0f} ({eager['decode_launches'] / r['decode_launches']:5.1f}x fewer) "
              f"{r['prefill_launches']:8.0f} ({eager['prefill_launches'] / r['prefill_launches']:5.1f}x fewer)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--max-num-seqs", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {hostinfo.describe()}, torch {torch.__version__}, 1 thread")
    with tempfile.TemporaryDirectory() as tmp:
        tiny = make_tiny_checkpoint(Path(tmp) / "tiny", "llama", max_position_embeddings=256)
        print("CPU, tiny random Llama, cpu kernels: one decode step, CPU graph replay vs eager (median)")
        compare(tiny, args.sizes, args.repeats, max_num_seqs=max(args.sizes), backend="cpu", device="cpu")

        print("CPU, tiny random Llama (2 layers): the cudagraph modes, launches per step (graph replays + aten ops "
              "outside them; counted, not timed)")
        prompts = [[3 + (7 * i + 3 * j) % 200 for j in range(n)] for i, n in enumerate([5, 9, 3, 12, 7, 4])]
        print_modes_report(modes_report(tiny, prompts, max_num_seqs=4, max_num_batched_tokens=32, block_size=4,
                                        cudagraph_capture_sizes=[1, 2, 4, 8, 16, 32]))

        trace = make_trace(args.requests, seed=0)
        sizes = decode_batch_sizes(tiny, trace, args.max_num_seqs)
        print(f"padding: trace S1, {args.requests} requests, max_num_seqs={args.max_num_seqs}, "
              f"{len(sizes)} decode steps of mean batch {sum(sizes) / len(sizes):.1f}")
        padding_report(sizes, args.max_num_seqs)

        if not torch.cuda.is_available():
            print("GPU: no NVIDIA GPU here; the CUDA graph section did not run")
            return
        print(f"GPU: {torch.cuda.get_device_name()}, Triton kernels, fp16; CUDA graph vs eager decode step")
        big = make_tiny_checkpoint(Path(tmp) / "m100", "llama", **MODEL_100M)
        for name, model in (("tiny", tiny), ("~100M", big)):
            print(f" {name}:")
            compare(model, [1, 8, 32], args.repeats, max_num_seqs=32, backend="triton", device="cuda",
                    dtype="float16")
        print(f"  published: SGLang PR #1401, Llama-3-8B batch 1: {SGLANG_BS1[1] / SGLANG_BS1[0]:.2f}x with CUDA graph")


if __name__ == "__main__":
    main()
