"""mini_platform's ``LLM.generate`` against Hugging Face transformers' batched ``generate`` on the CPU.

    python benchmarks/vs_transformers.py [--threads 1] [--repeat 5]

Both sides run one process, the same tiny random Llama (``mini_platform.model.tiny``: 2 layers,
hidden 64, vocab 257, max context 512), fp32, greedy decoding, EOS ignored, ``--threads`` torch
threads (1 by default). The generated tokens are checked equal, token for token, before any figure
is printed; a mismatch exits with status 1. Our decode attention, rotary embedding, RMSNorm and KV cache write are
the numba-compiled kernels of ``mini_platform/ops/cpu/compiled.py`` when numba is installed
(``MINI_PLATFORM_CPU_COMPILED=0`` runs the torch ones); the ``model:`` line says which ran.

Two workloads, prompts of 8..64 random tokens from ``random.Random(0)``:

- fixed: 16 prompts x 64 output tokens. transformers gets one left-padded batch.
- mixed: 64 prompts whose output lengths are uniform in 8..128. transformers gets one left-padded
  batch and runs every row to the longest output (what a padded batch does); only each prompt's own
  tokens count as useful. mini_platform gives each request its own ``max_tokens``.

mini_platform runs twice: eager (the CPU platform's default) and with decode graphs (``enforce_eager=False``: the
decode steps replay CPU graphs, padded up to vLLM's capture sizes; prefills and mixed steps run eagerly).

Each side runs once to warm up, then ``--repeat`` times (5 by default), the sides alternating; the best
run of each counts. On a shared virtual machine one run in a few is slowed by neighbours, which three repeats
do not always outvote. Both clocks are printed: the CPU time of this process (one thread, so little disturbed by other
work on a shared machine) and the wall clock. The figures are ratios from one run on the machine printed
with them, never asserted in tests.
"""
from __future__ import annotations

import argparse
import functools
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

from mini_platform import LLM, SamplingParams
from mini_platform.model import make_tiny_checkpoint
from mini_platform.ops.cpu import compiled

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402

PAD = 0


def make_prompts(num_prompts: int, seed: int = 0, vocab: int = 257) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab) for _ in range(rng.randint(8, 64))] for _ in range(num_prompts)]


def mixed_workload() -> tuple[list[list[int]], list[int]]:
    """The mixed workload: 64 prompts (``make_prompts``, seed 2) and their output lengths, uniform in 8..128 (seed 1)."""
    rng = random.Random(1)
    prompts = make_prompts(64, seed=2)
    return prompts, [rng.randint(8, 128) for _ in prompts]


def hf_generate(model, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """One left-padded batch through transformers' greedy ``generate``; each row's new tokens."""
    import transformers as tf
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    config = tf.GenerationConfig(max_new_tokens=max_new_tokens, min_new_tokens=None, do_sample=False,
                                 eos_token_id=None, pad_token_id=PAD)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
    return out[:, width:].tolist()


def ours_generate(llm: LLM, prompts: list[list[int]], lengths: list[int]) -> list[list[int]]:
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths]
    return [out.token_ids for out in llm.generate(prompts, params)]


def timed(fn: Callable[[], list[list[int]]]) -> tuple[float, float, list[list[int]]]:
    """``(cpu_seconds, wall_seconds, result)`` of one call. CPU time counts only this process (one thread),
    so other work on a shared machine disturbs it far less than the wall clock."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    return time.process_time() - cpu, time.perf_counter() - wall, result


def compare(name: str, llms: dict[str, LLM], hf_model, prompts: list[list[int]], lengths: list[int],
            repeat: int) -> bool:
    """Run every side ``repeat`` times, alternating (after one warm-up each); keep each side's best run. ``llms``: our
    engines by name (eager, graphs)."""
    runs = {"transformers": lambda: [row[:n] for row, n in zip(hf_generate(hf_model, prompts, max(lengths)), lengths)]}
    runs.update({side: functools.partial(ours_generate, llm, prompts, lengths) for side, llm in llms.items()})
    best = {side: (float("inf"), float("inf")) for side in runs}
    tokens = {}
    for side, fn in runs.items():
        tokens[side] = fn()  # warm-up
    for _ in range(repeat):
        for side, fn in runs.items():
            cpu, wall, _ = timed(fn)
            best[side] = (min(best[side][0], cpu), min(best[side][1], wall))
    for side in llms:
        if tokens["transformers"] != tokens[side]:
            bad = next(i for i, (a, b) in enumerate(zip(tokens["transformers"], tokens[side])) if a != b)
            print(f"{name}: MISMATCH at prompt {bad}: transformers {tokens['transformers'][bad][:12]}... "
                  f"vs {side} {tokens[side][bad][:12]}...")
            return False
    useful = sum(lengths)
    print(f"{name}: {len(prompts)} prompts, {useful} useful tokens (transformers computes {len(prompts) * max(lengths)}); "
          f"same tokens: yes")
    for side, (cpu, wall) in best.items():
        print(f"  {side:26} {useful / cpu:8.1f} useful tok/s of CPU time ({cpu:5.2f} s)   wall {wall:5.2f} s")
    hf_cpu, hf_wall = best["transformers"]
    for side in llms:
        our_cpu, our_wall = best[side]
        print(f"  {side} / transformers: {hf_cpu / our_cpu:.2f}x by CPU time, {hf_wall / our_wall:.2f}x by wall time")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import transformers as tf

    with tempfile.TemporaryDirectory() as tmp:
        path = make_tiny_checkpoint(Path(tmp) / "tiny", "llama")
        hf_model = tf.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        hf_model.generation_config.eos_token_id = None  # else generate fills in the config's EOS
        llms = {"mini_platform": LLM(path, max_num_seqs=64, enable_prefix_caching=False),
                "mini_platform, CPU graphs": LLM(path, max_num_seqs=64, enable_prefix_caching=False,
                                                 enforce_eager=False)}
        print(f"machine: {hostinfo.describe()}, torch {torch.__version__}, transformers {tf.__version__}, "
              f"{torch.get_num_threads()} thread(s)")
        print(f"model: tiny random Llama (2 layers, hidden 64, vocab 257), fp32, greedy, cpu backend (kernels: "
              f"{compiled.describe()}); transformers attention: {hf_model.config._attn_implementation}")
        fixed = make_prompts(16, seed=0)
        ok = compare("fixed", llms, hf_model, fixed, [64] * len(fixed), args.repeat)
        ok &= compare("mixed", llms, hf_model, *mixed_workload(), args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
