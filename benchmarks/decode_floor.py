"""The decode step against the machine's own limit: a step at batch 1 must read every weight once, so it
cannot be faster than ``weight bytes / memory bandwidth``.

    python benchmarks/decode_floor.py [--dtype float32 bfloat16] [--batch 1 8 32] [--steps 16] [--threads N]

A Qwen2.5-0.5B-sized model (24 layers, hidden 896, 14 query / 2 KV heads of 64, MLP 4864, vocab 151936,
tied embeddings: 494 M parameters) with random weights is written locally (``mini_platform.model.tiny``
with those sizes; nothing is downloaded). In the same run:

- the memory bandwidth of this machine, measured with torch on the same threads: a copy of a 512 MiB tensor
  (``dst.copy_(src)``, 2 bytes moved per byte copied) and a STREAM-like triad (``a = b + s * c``,
  ``torch.add(b, c, alpha=s, out=a)``, three arrays of 512 MiB: five times the L3 cache of the machine this was
  written on), best of several, at the start;
- the decode step of mini_platform's engine (``LLMEngine.step`` with every request decoding; at batch 1 in
  bf16 its matmuls run the compiled GEMV of ``mini_platform/ops/cpu/gemv.py``) and of transformers (greedy
  ``generate``, each step timed as it ends through a streamer), side by side;
- the same engine in graph mode (``enforce_eager=False``, one CPU graph captured for the batch size): the step replays
  the recorded kernels (the compiled ones as one node each) with none of the model's Python in between, the way a
  CUDA graph saves a GPU the launches of its kernels;
- the step's matmuls alone (every linear layer and the LM head through ``ops.linear`` on the same number of rows,
  nothing else, run after each of our decode steps): the ceiling of our eager step; the rest of the step (attention,
  norms, sampling, Python) is the difference. A graph's replay also skips the Python of each ``ops.linear`` call, so
  it can beat this ceiling;
- reading those weights alone, with no matmul (:func:`reads_timer`: torch sums each weight's bytes, read as fp32
  numbers, run after the matmuls): what any kernel that reads every weight once gets on this machine and these
  threads, the ceiling of the matmuls. Against the triad it says how much of the floor is out of reach of a kernel
  that only reads (a triad also writes, and keeps three streams in flight);
- each as a fraction of the floor: the bytes one decode step reads at least (every weight once: the tied embedding
  counts once, as the LM head reads it; the embedding lookup reads one row) divided by the bandwidth, over the
  step's time (1.0 reads the weights at the full measured bandwidth). The bandwidth of each step's floor is a triad
  run right after that step (for transformers, inside the streamer, outside the timed interval): on a machine shared
  with others the bandwidth moves by a third within minutes, so a step is compared with the machine as it was at
  that moment, not with its best moment. The medians of the steps' times and of their fractions are printed, with
  the median triad of the row.

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


class Triad:
    """A STREAM-like triad, ``a = b + 3 * c`` over three preallocated fp32 arrays of ``gib`` GiB each: calling it
    runs one and returns the bytes per second it moved (3 arrays: two read, one written)."""

    def __init__(self, gib: float = 0.5) -> None:
        n = int(gib * (1 << 30)) // 4
        self.a, self.b, self.c = torch.empty(n), torch.rand(n), torch.rand(n)

    def __call__(self) -> float:
        start = time.perf_counter()
        torch.add(self.b, self.c, alpha=3.0, out=self.a)
        return 3 * self.a.nbytes / (time.perf_counter() - start)


def bandwidth(triad: Triad, repeat: int = 5) -> dict[str, float]:
    """Bytes per second of a large copy (``triad``'s arrays) and of ``triad``, best of ``repeat``."""
    best = {"copy": 0.0, "triad": 0.0}
    for _ in range(repeat):
        start = time.perf_counter()
        triad.a.copy_(triad.b)
        best["copy"] = max(best["copy"], 2 * triad.a.nbytes / (time.perf_counter() - start))
        best["triad"] = max(best["triad"], triad())
    return best


def of_floor(floor_bytes: int, seconds: list[float], bandwidths: list[float]) -> float:
    """The median over steps of ``floor / step``, each step's floor ``floor_bytes`` over the bandwidth measured
    right after it."""
    return statistics.median(floor_bytes / rate / step for step, rate in zip(seconds, bandwidths, strict=True))


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
    through ``ops.linear`` on ``batch`` rows, on the cpu backend, nothing else. At batch 1 that is the eager engine's
    own ceiling: its step cannot be faster, whatever the rest of the step costs (a graph's replay, which calls the
    kernels without ``ops.linear``'s Python, can)."""
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


def read_views(model) -> list[torch.Tensor]:
    """The weights and biases of :func:`step_matmuls`, each as a flat tensor of fp32 numbers over the same bytes (a
    bf16 tensor's bits two at a time; its byte count is even in every model here), for :func:`reads_timer`."""
    return [t.reshape(-1).view(torch.float32) for pair in step_matmuls(model) for t in pair if t is not None]


def reads_timer(model) -> Callable[[], float]:
    """A function that times one pass reading every weight and bias of the step's matmuls once, with no matmul:
    ``torch.sum`` of each, its bytes read as fp32 numbers (:func:`read_views`; the sums mean nothing, torch's reduction
    is just a fast way to read memory on the same threads: on the 2-core Xeon this was written on it read as fast as
    a numba loop that xors every word). The ceiling of the matmuls: no kernel that reads every weight is faster."""
    views = read_views(model)

    def one_pass() -> float:
        with torch.inference_mode():
            start = time.perf_counter()
            for view in views:
                view.sum()
            return time.perf_counter() - start
    return one_pass


def ours_step(path: Path, dtype: str, prompts: list[list[int]], steps: int, probe: Callable[[], float],
              graphs: bool = False) -> tuple[list[float], list[float], list[float], list[float]]:
    """Seconds of the first ``steps`` engine steps in which every request decodes; after each, seconds of its matmuls
    alone, of reading their weights alone, then the bandwidth ``probe`` measures (so that all four see the machine in
    the same state). ``graphs``: the engine captures one CPU graph, of ``len(prompts)`` requests, and each of those
    steps must replay it (RuntimeError otherwise: an eager step is never reported as a graph's)."""
    from mini_platform import LLMEngine, SamplingParams

    mode = dict(enforce_eager=False, cudagraph_capture_sizes=[len(prompts)]) if graphs else {}
    engine = LLMEngine(path, dtype=dtype, max_num_seqs=len(prompts), max_model_len=256,
                       max_num_batched_tokens=4096, enable_prefix_caching=False, **mode)
    matmuls, reads = matmuls_timer(engine.runner.model, len(prompts)), reads_timer(engine.runner.model)
    for i, prompt in enumerate(prompts):
        engine.add_request(prompt, SamplingParams(temperature=0, max_tokens=steps + 3, ignore_eos=True), str(i))
    times, matmul_times, read_times, rates = [], [], [], []
    while engine.has_unfinished_requests():
        start = time.perf_counter()
        outputs = engine.step()
        seconds = time.perf_counter() - start
        if len(outputs) == len(prompts) and all(len(o.token_ids) > 1 for o in outputs):   # a decode-only step
            if graphs and engine.stats()["num_graph_steps"] != len(times) + 1:
                raise RuntimeError(f"a decode step of {len(prompts)} request(s) ran eagerly in graph mode")
            times.append(seconds)
            matmul_times.append(matmuls())
            read_times.append(reads())
            rates.append(probe())
    engine.close()
    return times[:steps], matmul_times[:steps], read_times[:steps], rates[:steps]


def hf_step(model, prompts: list[list[int]], steps: int, probe: Callable[[], float]) -> tuple[list[float], list[float]]:
    """Seconds of ``steps`` decode steps of transformers' greedy generate on one left-padded batch, and the bandwidth
    ``probe`` measured right after each. generate pushes every new token to a streamer: the streamer notes when a
    step ended, runs the probe, and notes when generate goes on, so a step's time is from the end of one probe to the
    start of the next push and the probe is never inside it. (A difference of two whole runs, as this once was, came out
    negative on a busy machine.)"""
    import transformers
    from transformers.generation.streamers import BaseStreamer

    class Clock(BaseStreamer):
        """For each batch of tokens pushed (the prompt, then one token per request after each step): when the push
        came, the probe's bandwidth, and when the push returned."""
        def __init__(self) -> None:
            self.pushed: list[tuple[float, float, float]] = []

        def put(self, value) -> None:
            came = time.perf_counter()
            rate = probe()
            self.pushed.append((came, rate, time.perf_counter()))

        def end(self) -> None:
            pass

    width = max(len(p) for p in prompts)
    ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])

    def generate(new: int) -> list[tuple[float, float, float]]:
        config = transformers.GenerationConfig(max_new_tokens=new, min_new_tokens=new, do_sample=False,
                                               eos_token_id=None, pad_token_id=PAD)
        clock = Clock()
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, generation_config=config, streamer=clock)
        return clock.pushed

    generate(2)   # warm-up
    pushed = generate(1 + steps)   # the prompt, the prefill's token, then `steps` decode steps
    decodes = list(zip(pushed[1:], pushed[2:]))
    return [later[0] - earlier[2] for earlier, later in decodes], [later[1] for _, later in decodes]


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
    triad = Triad()
    bw = bandwidth(triad)
    from mini_platform.ops.cpu import compiled
    print(f"machine: {hostinfo.describe()}; torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{args.threads} thread(s); mini_platform's cpu kernels: {compiled.describe()}")
    print(f"bandwidth at the start (torch, {args.threads} thread(s), best of 5): copy {bw['copy'] / 1e9:.1f} GB/s, "
          f"triad {bw['triad'] / 1e9:.1f} GB/s; each step's floor uses a triad run right after it")
    with tempfile.TemporaryDirectory(prefix="decode-floor-") as tmp:
        for dtype_name in args.dtype:
            dtype = getattr(torch, dtype_name)
            path = make_tiny_checkpoint(Path(tmp) / dtype_name, "qwen2", seed=0, torch_dtype=dtype_name, **QWEN25_05B)
            hf_model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
            hf_model.generation_config.eos_token_id = None
            read = weight_bytes(QWEN25_05B, dtype)
            print(f"\nQwen2.5-0.5B-sized, random weights, {dtype_name}: {read / 1e9:.2f} GB read per decode step; "
                  f"floor {read / bw['triad'] * 1e3:.1f} ms at the start's triad")
            print(f"{'batch':>6}{'mini_platform':>16}{'of floor':>10}{'CPU graph':>12}{'of floor':>10}"
                  f"{'transformers':>15}{'of floor':>10}{'ours/hf':>9}"
                  f"{'our matmuls alone':>20}{'of floor':>10}{'reading alone':>16}{'of floor':>10}{'triad':>12}")
            for batch in args.batch:
                prompts = prompts_for(batch, QWEN25_05B["vocab_size"])
                ours, matmuls, reads, our_rates = ours_step(path, dtype_name, prompts, args.steps, triad)
                # Its matmuls and reads run too, so that each graph step meets its triad after the same work as an
                # eager one; only the eager run's are printed.
                graph, _, _, graph_rates = ours_step(path, dtype_name, prompts, args.steps, triad, graphs=True)
                hf, hf_rates = hf_step(hf_model, prompts, args.steps, triad)
                median = statistics.median
                print(f"{batch:>6}{median(ours) * 1e3:>13.1f} ms{of_floor(read, ours, our_rates):>10.2f}"
                      f"{median(graph) * 1e3:>9.1f} ms{of_floor(read, graph, graph_rates):>10.2f}"
                      f"{median(hf) * 1e3:>12.1f} ms{of_floor(read, hf, hf_rates):>10.2f}"
                      f"{median(hf) / median(ours):>9.2f}"
                      f"{median(matmuls) * 1e3:>17.1f} ms{of_floor(read, matmuls, our_rates):>10.2f}"
                      f"{median(reads) * 1e3:>13.1f} ms{of_floor(read, reads, our_rates):>10.2f}"
                      f"{median(our_rates + graph_rates + hf_rates) / 1e9:>7.1f} GB/s", flush=True)
            del hf_model
            Path(path, "model.safetensors").unlink()
    print(f"\nmachine at the end: {hostinfo.describe()}")


if __name__ == "__main__":
    main()
