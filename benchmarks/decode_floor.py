"""The decode step against the machine's own limit: a step at batch 1 must read every weight once, so it
cannot be faster than ``weight bytes / memory bandwidth``.

    python benchmarks/decode_floor.py [--dtype float32 bfloat16] [--batch 1 8 32] [--steps 16] [--threads N]

A Qwen2.5-0.5B-sized model (24 layers, hidden 896, 14 query / 2 KV heads of 64, MLP 4864, vocab 151936,
tied embeddings: 494 M parameters) with random weights is written locally (``mini_platform.model.tiny``
with those sizes; nothing is downloaded). In the same run:

- the memory bandwidth of this machine, measured with torch on the same threads: a copy of a 1 GiB tensor
  (``dst.copy_(src)``, 2 bytes moved per byte copied) and a STREAM-like triad (``a = b + s * c``,
  ``torch.add(b, c, alpha=s, out=a)``, 3 arrays), best of several;
- the floor: the bytes one decode step reads at least (every weight once: the tied embedding counts once,
  as the LM head reads it; the embedding lookup reads one row) divided by the triad bandwidth;
- the decode step of mini_platform's engine (``LLMEngine.step`` with every request decoding, median; at batch 1 in
  bf16 its matmuls run the compiled GEMV of ``mini_platform/ops/cpu/gemv.py``) and of transformers (greedy
  ``generate``, each step timed as it ends through a streamer, median), side by side, and each as a fraction of the
  floor (floor / step: 1.0 reads the weights at the full measured bandwidth);
- the step's matmuls alone (every linear layer and the LM head through ``ops.linear`` on the same number of rows,
  nothing else; timed after each decode step, median): the ceiling of our step; the rest of the step (attention,
  norms, sampling, Python) is the difference.

At batch 8 and 32 the prompts have mixed lengths (16..112 tokens); transformers gets one left-padded batch.
Ratios from one run on the machine printed with them; run it on an idle machine.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402

QWEN25_05B = {"vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
              "num_attention_heads": 14, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 4096,
              "rope_theta": 1000000.0, "tie_word_embeddings": True, "rms_norm_eps": 1e-6}
PAD = 0


def bandwidth(threads: int, gib: float = 1.0, repeat: int = 5) -> dict[str, float]:
    """Bytes per second of a large copy and of a triad, best of ``repeat``, on ``threads`` torch threads."""
    torch.set_num_threads(threads)
    n = int(gib * (1 << 30)) // 4
    a, b, c = torch.empty(n), torch.rand(n), torch.rand(n)
    best = {"copy": 0.0, "triad": 0.0}
    for _ in range(repeat):
        start = time.perf_counter()
        a.copy_(b)
        best["copy"] = max(best["copy"], 2 * 4 * n / (time.perf_counter() - start))
        start = time.perf_counter()
        torch.add(b, c, alpha=3.0, out=a)
        best["triad"] = max(best["triad"], 3 * 4 * n / (time.perf_counter() - start))
    del a, b, c
    return best


def weight_bytes(config: dict, dtype: torch.dtype) -> int:
    """Bytes of the weights one decode step reads: every matrix and norm once (the tied embedding once, read
    as the LM head; the embedding lookup itself reads one row)."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    q, kv = config["num_attention_heads"] * config["head_dim"], config["num_key_value_heads"] * config["head_dim"]
    per_layer = h * (q + 2 * kv) + (q + 2 * kv) + q * h + 3 * h * i + 2 * h   # qkv (+ Qwen2's bias), o, mlp, norms
    params = layers * per_layer + config["vocab_size"] * h + h
    return params * torch.tensor([], dtype=dtype).element_size()


def prompts_for(batch: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    lengths = [16] if batch == 1 else [rng.randint(16, 112) for _ in range(batch)]
    return [[rng.randrange(3, vocab) for _ in range(n)] for n in lengths]


def step_matmuls(model) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """``(weight, bias)`` of every matmul of a decode step, in the order a step runs them: the linear layers, then
    the LM head (the tied embedding when there is no separate head)."""
    from mini_platform.model.layers import Linear

    head = model.model.embed_tokens if model.lm_head is None else model.lm_head
    return [(m.weight, m.bias) for m in model.modules() if isinstance(m, Linear)] + [(head.weight, None)]


def matmuls_timer(model, batch: int) -> Callable[[], float]:
    """A function that times one pass of the decode step's matmuls alone (:func:`step_matmuls`), one after another
    through ``ops.linear`` on ``batch`` rows, on the cpu backend, nothing else. At batch 1 that is the engine's own
    ceiling: its step cannot be faster, whatever the rest of the step costs."""
    from mini_platform import ops

    layers = step_matmuls(model)
    inputs = {w.shape[1]: torch.randn(batch, w.shape[1], dtype=w.dtype) for w, _ in layers}

    def one_pass() -> float:
        with torch.inference_mode(), ops.use_backend("cpu"):
            start = time.perf_counter()
            for weight, bias in layers:
                ops.linear(inputs[weight.shape[1]], weight, bias)
            return time.perf_counter() - start
    return one_pass


def ours_step(path: Path, dtype: str, prompts: list[list[int]], steps: int) -> tuple[float, float]:
    """Median seconds of an engine step in which every request decodes, and of its matmuls alone, timed after each
    such step (so that both see the machine in the same state)."""
    from mini_platform import LLMEngine, SamplingParams

    engine = LLMEngine(path, dtype=dtype, max_num_seqs=len(prompts), max_model_len=256,
                       max_num_batched_tokens=4096, enable_prefix_caching=False)
    matmuls = matmuls_timer(engine.runner.model, len(prompts))
    for i, prompt in enumerate(prompts):
        engine.add_request(prompt, SamplingParams(temperature=0, max_tokens=steps + 3, ignore_eos=True), str(i))
    times, matmul_times = [], []
    while engine.has_unfinished_requests():
        start = time.perf_counter()
        outputs = engine.step()
        seconds = time.perf_counter() - start
        if len(outputs) == len(prompts) and all(len(o.token_ids) > 1 for o in outputs):   # a decode-only step
            times.append(seconds)
            matmul_times.append(matmuls())
    engine.close()
    return statistics.median(times[:steps]), statistics.median(matmul_times[:steps])


def hf_step(model, prompts: list[list[int]], steps: int) -> float:
    """Median seconds of a decode step of transformers' greedy generate on one left-padded batch: each step timed as it
    ends (generate pushes every new token to a streamer), as our engine's steps are, so that a slow moment of the
    machine moves the median little. A difference of two whole runs, as this once was, came out negative on a busy
    machine."""
    import transformers
    from transformers.generation.streamers import BaseStreamer

    class Clock(BaseStreamer):
        """When generate pushed each batch of tokens: the prompt, then one token per request after each step."""
        def __init__(self) -> None:
            self.times: list[float] = []

        def put(self, value) -> None:
            self.times.append(time.perf_counter())

        def end(self) -> None:
            pass

    width = max(len(p) for p in prompts)
    ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])

    def generate(new: int) -> list[float]:
        config = transformers.GenerationConfig(max_new_tokens=new, min_new_tokens=new, do_sample=False,
                                               eos_token_id=None, pad_token_id=PAD)
        clock = Clock()
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, generation_config=config, streamer=clock)
        return clock.times

    generate(2)   # warm-up
    times = generate(1 + steps)   # the prompt, the prefill's token, then `steps` decode steps
    return statistics.median(later - earlier for earlier, later in zip(times[1:], times[2:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8, 32])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    import transformers

    from mini_platform.model import make_tiny_checkpoint

    torch.set_num_threads(args.threads)
    bw = bandwidth(args.threads)
    from mini_platform.ops.cpu import compiled
    print(f"machine: {hostinfo.describe()}; torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{args.threads} thread(s); mini_platform's cpu kernels: {compiled.describe()}")
    print(f"bandwidth (torch, {args.threads} thread(s)): copy {bw['copy'] / 1e9:.1f} GB/s, "
          f"triad {bw['triad'] / 1e9:.1f} GB/s (the floor uses the triad)")
    with tempfile.TemporaryDirectory(prefix="decode-floor-") as tmp:
        for dtype_name in args.dtype:
            dtype = getattr(torch, dtype_name)
            path = make_tiny_checkpoint(Path(tmp) / dtype_name, "qwen2", seed=0, torch_dtype=dtype_name, **QWEN25_05B)
            hf_model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
            hf_model.generation_config.eos_token_id = None
            floor = weight_bytes(QWEN25_05B, dtype) / bw["triad"]
            print(f"\nQwen2.5-0.5B-sized, random weights, {dtype_name}: {weight_bytes(QWEN25_05B, dtype) / 1e9:.2f} GB "
                  f"read per decode step; floor {floor * 1e3:.1f} ms")
            print(f"{'batch':>6}{'mini_platform':>16}{'of floor':>10}{'transformers':>15}{'of floor':>10}{'ours/hf':>9}"
                  f"{'our matmuls alone':>20}{'of floor':>10}")
            for batch in args.batch:
                prompts = prompts_for(batch, QWEN25_05B["vocab_size"])
                ours, matmuls = ours_step(path, dtype_name, prompts, args.steps)
                hf = hf_step(hf_model, prompts, args.steps)
                print(f"{batch:>6}{ours * 1e3:>13.1f} ms{floor / ours:>10.2f}{hf * 1e3:>12.1f} ms{floor / hf:>10.2f}"
                      f"{hf / ours:>9.2f}{matmuls * 1e3:>17.1f} ms{floor / matmuls:>10.2f}", flush=True)
            del hf_model
            Path(path, "model.safetensors").unlink()
    print(f"\nmachine at the end: {hostinfo.describe()}")


if __name__ == "__main__":
    main()
