"""Throughput of the engine with a tiny model: continuous vs static batching, prefix caching.

It runs on the current platform's device (the CPU on a machine without a GPU) and prints which.

Run: ``python benchmarks/throughput.py`` (about a minute on 2 cores). Ratios come from one run on
one machine, which is printed with them; they are never asserted in tests.

Trace "S1" (``make_trace``): ``--requests`` requests (128) from ``random.Random(--seed)`` (0);
prompt lengths uniform in 8..64 tokens; output lengths long-tailed: 85 % uniform in 4..24 tokens,
15 % uniform in 96..160 tokens (chat answers with an occasional long one). Greedy decoding,
``ignore_eos`` so every request produces exactly its output length.

Both batching modes run on one engine with prefix caching off, so neither reuses prompt blocks the
other (or the warm-up) computed.

- continuous batching: every request is queued at once and the scheduler refills a slot as soon as
  a request finishes (``max_num_seqs = --batch``);
- static batching: requests are cut into fixed batches of ``--batch`` in arrival order; each batch
  runs until its longest request finishes before the next batch starts, and a request that is done
  keeps its slot (its extra tokens are discarded), as in a padded batch of Hugging Face ``generate``.
  Prompts are not padded to the longest one here, which favours static batching. Same engine, same
  kernels; only the useful tokens count in its throughput.

Prefix caching: ``--shared`` (24) requests whose prompts are one 480-token shared prefix plus 16
tokens of their own, 4 output tokens each, run with and without ``enable_prefix_caching``.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

from mini_platform import LLM, SamplingParams, ops
from mini_platform.model import make_tiny_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402


# The tiny random Llama of mini_platform.model.tiny (2 layers, hidden 64, vocab 257), longer context.
MODEL = dict(max_position_embeddings=1024)


def make_trace(num_requests: int = 64, seed: int = 0, vocab: int = 257) -> list[tuple[list[int], int]]:
    """``(prompt_token_ids, output_len)`` per request of trace S1 (see the module docstring)."""
    rng = random.Random(seed)
    trace = []
    for _ in range(num_requests):
        prompt = [rng.randrange(3, vocab) for _ in range(rng.randint(8, 64))]
        output = rng.randint(96, 160) if rng.random() < 0.15 else rng.randint(4, 24)
        trace.append((prompt, output))
    return trace


def _params(output_len: int) -> SamplingParams:
    return SamplingParams(temperature=0, max_tokens=output_len, ignore_eos=True)


def run_continuous(llm: LLM, trace: list[tuple[list[int], int]]) -> tuple[float, int]:
    """Seconds and engine steps to serve the whole trace with continuous batching."""
    engine = llm.engine
    start = time.perf_counter()
    for prompt, output_len in trace:
        engine.add_request(prompt, _params(output_len))
    steps = 0
    while engine.has_unfinished_requests():
        engine.step()
        steps += 1
    return time.perf_counter() - start, steps


def run_static(llm: LLM, trace: list[tuple[list[int], int]], batch: int) -> tuple[float, int]:
    """Seconds and steps with static batching: fixed batches in arrival order, each padded to its longest
    request (a finished request keeps its slot and its extra tokens are thrown away, as in a padded
    ``generate`` batch) and run to the end before the next batch starts."""
    engine = llm.engine
    start, steps = time.perf_counter(), 0
    for i in range(0, len(trace), batch):
        group = trace[i:i + batch]
        longest = max(n for _, n in group)
        for prompt, _ in group:
            engine.add_request(prompt, _params(longest))
        while engine.has_unfinished_requests():
            engine.step()
            steps += 1
    return time.perf_counter() - start, steps


def run_shared_prefix(model: Path, num_requests: int, prefix_caching: bool, seed: int = 1) -> tuple[float, int]:
    """Seconds and prefix-cache hit tokens for prompts sharing a 480-token prefix."""
    rng = random.Random(seed)
    prefix = [rng.randrange(3, 257) for _ in range(480)]
    prompts = [prefix + [rng.randrange(3, 257) for _ in range(16)] for _ in range(num_requests)]
    llm = LLM(model, max_num_seqs=8, enable_prefix_caching=prefix_caching)
    llm.generate(prompts[:1], _params(1))      # warm-up; with caching, this also caches the prefix
    start = time.perf_counter()
    llm.generate(prompts, _params(4))
    return time.perf_counter() - start, llm.engine.stats()["num_prefix_hit_tokens"]


def engine_label(llm: LLM) -> str:
    """What the engine really ran on: device, kernel backend, dtype."""
    engine = llm.engine
    device, backend = engine.model.device, ops.current_backend(engine.config.backend)
    where = f"{device} ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else str(device)
    interpreted = " (Triton interpreter)" if backend == "triton" and os.environ.get("TRITON_INTERPRET") == "1" else ""
    return f"{where}, {backend} kernels{interpreted}, {str(engine.model.dtype).removeprefix('torch.')}"


def machine() -> str:
    return f"{hostinfo.describe()}, torch {torch.__version__}, {torch.get_num_threads()} threads"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--shared", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1: tiny matmuls gain nothing from more, and on a shared "
                             "machine OpenMP threads waiting on each other swamp the measurement)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        model = make_tiny_checkpoint(Path(tmp) / "tiny", "llama", **MODEL)
        trace = make_trace(args.requests, args.seed)
        tokens = sum(n for _, n in trace)
        llm = LLM(model, max_num_seqs=args.batch, enable_prefix_caching=False)
        print(f"machine: {machine()}")
        print(f"model: tiny random Llama (2 layers, hidden 64) on {engine_label(llm)}")
        print(f"trace S1: {len(trace)} requests, {tokens} output tokens, batch {args.batch}")
        run_continuous(llm, trace[:4])          # warm-up
        t_cont, s_cont = run_continuous(llm, trace)
        t_stat, s_stat = run_static(llm, trace, args.batch)
        print(f"continuous batching: {tokens / t_cont:8.1f} tok/s  {s_cont:5d} steps  {t_cont:6.2f} s")
        padded = sum(len(trace[i:i + args.batch]) * max(n for _, n in trace[i:i + args.batch])
                     for i in range(0, len(trace), args.batch))
        print(f"static batching:     {tokens / t_stat:8.1f} tok/s  {s_stat:5d} steps  {t_stat:6.2f} s  "
              f"({padded} tokens generated, {tokens} of them useful)")
        print(f"continuous / static: {s_stat / s_cont:.2f}x fewer steps (scheduling alone, the same on any machine); "
              f"time ratio {t_stat / t_cont:.2f}x this run (varies with the machine and its load)")

        t_off, _ = run_shared_prefix(model, args.shared, prefix_caching=False)
        t_on, hits = run_shared_prefix(model, args.shared, prefix_caching=True)
        print(f"shared 480-token prefix, {args.shared} requests: prefix caching on {t_on:.2f} s, "
              f"off {t_off:.2f} s -> {t_off / t_on:.2f}x, this run ({hits} prompt tokens served from the cache)")


if __name__ == "__main__":
    main()
