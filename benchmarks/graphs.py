"""Decode graphs versus eager: step time at several batch sizes, and the padding the capture schedule costs.

Run: ``python benchmarks/graphs.py`` (under a minute on 2 cores). One run, ratios printed with the machine.

- CPU, tiny random Llama (2 layers, hidden 64): one decode step (``ModelRunner.execute``: fill the buffers,
  run the model, compute the logits) timed with the CPU graph replayed and eagerly, at ``--sizes``, the
  two alternating step by step; medians of ``--repeats``.
  The CPU graph replays the recorded aten calls from Python, so what it saves is the model's Python code
  (modules, kernel dispatch, argument checks), not kernel launches; its decode attention also reads every
  block of the block-table width (fixed shapes) where the eager kernel reads only ``seq_len`` keys.
- Padding: the decode batch sizes of trace S1 (benchmarks/throughput.py) under continuous batching,
  padded up to vLLM's default schedule, to powers of two and to every size (no padding).
- NVIDIA GPU only (``torch.cuda.is_available()``): CUDA graph versus eager decode steps with the Triton
  kernels at batch 1, 8 and 32 for the tiny model and a ~100M-parameter one, next to SGLang's published
  1.3x at batch 1 (PR #1401: Llama-3-8B, 107.79 -> 141.63 tok/s). Not run on a machine without a GPU.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

from mini_platform import LLM, SamplingParams
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
