"""Where the time of mini_platform's engine step goes, on the mixed workload of ``benchmarks/vs_transformers.py``.

    python benchmarks/host_step.py [--threads 1] [--repeat 5]

The same tiny random Llama, the same 64 prompts with output lengths uniform in 8..128, greedy, fp32, ``--threads``
torch threads (1). Each part of the step is timed with ``time.perf_counter`` around it, by wrappers set on this
engine's own objects only (a profiler would inflate the Python-heavy parts several times over):

- ``schedule``: ``Scheduler.schedule`` (the token plan, KV blocks, admissions);
- ``step inputs``: ``model_runner.step_input`` (the step flattened to lists by ``prepare_inputs`` and
  ``build_step_metadata``) and ``InputBuffers.fill`` (those lists copied into the persistent buffers);
- ``model``: ``ModelRunner._forward`` and ``ModelRunner._logits`` (the forward and the LM head);
- ``update``: ``Scheduler.update`` (counters, the new tokens, the stop checks);
- ``the rest``: the rest of ``LLM.generate`` (sampling, the NaN screen, requests in and outputs out).

It prints milliseconds per run and each part's share for the fastest of ``--repeat`` runs (after one warm-up).
Everything but ``model`` is host work, what vLLM V1 keeps small with a persistent batch (``InputBatch`` in
``vllm/v1/worker/gpu_input_batch.py``, read at commit a9e3b0a: updated by each step's differences instead of rebuilt).
Times from one run on the machine printed with them.
"""
from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

from mini_platform import LLM, model_runner
from mini_platform.model import make_tiny_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo and the workload
import hostinfo  # noqa: E402
import vs_transformers  # noqa: E402

PARTS = ("schedule", "step inputs", "model", "update")


_inside: list[str] = []   # the part being clocked now, if any


def clocked(totals: dict[str, float], part: str, fn: Callable) -> Callable:
    """``fn``, adding the seconds each call takes to ``totals[part]``. RuntimeError when it is called inside another
    clocked part: that time would be counted twice."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _inside:
            raise RuntimeError(f"{part!r} was called inside {_inside[0]!r}: clock parts that do not nest")
        _inside.append(part)
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[part] += time.perf_counter() - start
            _inside.pop()
    return wrapper


def install_clocks(llm: LLM, totals: dict[str, float]) -> None:
    """Wrap the parts of ``llm``'s step (see the module docstring) so that each call adds to ``totals``."""
    engine = llm.engine
    runner = engine.runner
    engine.scheduler.schedule = clocked(totals, "schedule", engine.scheduler.schedule)
    engine.scheduler.update = clocked(totals, "update", engine.scheduler.update)
    runner._forward = clocked(totals, "model", runner._forward)
    runner._logits = clocked(totals, "model", runner._logits)
    runner.buffers.fill = clocked(totals, "step inputs", runner.buffers.fill)
    # Looked up in its module at call time (ModelRunner.execute): this process only, restored by no one.
    model_runner.step_input = clocked(totals, "step inputs", model_runner.step_input)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    prompts, lengths = vs_transformers.mixed_workload()
    with tempfile.TemporaryDirectory() as tmp:
        llm = LLM(make_tiny_checkpoint(Path(tmp) / "tiny", "llama"), max_num_seqs=64, enable_prefix_caching=False)
        totals = dict.fromkeys(PARTS, 0.0)
        install_clocks(llm, totals)
        vs_transformers.ours_generate(llm, prompts, lengths)   # warm-up
        best: dict[str, float] | None = None
        for _ in range(args.repeat):
            totals.update(dict.fromkeys(PARTS, 0.0))
            start = time.perf_counter()
            vs_transformers.ours_generate(llm, prompts, lengths)
            run = {"whole run": time.perf_counter() - start, **totals}
            if best is None or run["whole run"] < best["whole run"]:
                best = run
    best["the rest"] = best["whole run"] - sum(best[part] for part in PARTS)
    print(f"machine: {hostinfo.describe()}, torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(f"mixed workload: {len(prompts)} prompts, {sum(lengths)} output tokens; fastest of {args.repeat} runs")
    for part in (*PARTS, "the rest", "whole run"):
        print(f"  {part:12} {best[part] * 1e3:8.1f} ms {best[part] / best['whole run']:7.1%}")


if __name__ == "__main__":
    main()
