"""What a small kernel call costs inside a decode step, where the weights streamed through the caches just before it.

    python benchmarks/cold_calls.py [--after 2 8 32 128] [--repeat 30] [--threads N]

A decode step at batch 1 alternates a matmul that reads megabytes of weights (1.6 to 17 MB a matrix at
Qwen2.5-0.5B's sizes in bf16) with small calls: an RMSNorm, a rotary embedding, the Python around each kernel. A
microbenchmark that calls one of them back to back times it with everything it touches in the caches: its Python
objects, the numba dispatcher's tables, the tensors' metadata. In a step, the weights just read have pushed all of that
out. This script times one call of each small kernel below, on Qwen2.5-0.5B's sizes in bf16 through
``mini_platform.ops`` on the cpu backend (the numba-compiled kernels when numba is installed), alternating: right after
the same call (warm), and right after reading ``--after`` MiB of other memory (``torch.sum`` over a buffer of that
size). Medians of ``--repeat`` rounds, in microseconds, and each as a multiple of the warm time. The machine is printed
with them: how much memory pushes the caches out depends on its caches, and on a shared virtual machine on what its
neighbours do.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo and the model's sizes
import hostinfo  # noqa: E402
from decode_floor import QWEN25_05B  # noqa: E402


def kernel_calls() -> dict[str, Callable[[], object]]:
    """One call of each timed kernel on bf16 inputs of Qwen2.5-0.5B's sizes at batch 1 (one token)."""
    from mini_platform import ops

    g = torch.Generator().manual_seed(0)

    def bf16(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * 0.1).bfloat16()

    c = QWEN25_05B
    hidden, head_dim = c["hidden_size"], c["head_dim"]
    x, residual, norm = bf16(1, hidden), bf16(1, hidden), bf16(hidden)
    q, k = bf16(1, c["num_attention_heads"] * head_dim), bf16(1, c["num_key_value_heads"] * head_dim)
    positions, cos_sin = torch.tensor([7]), bf16(64, head_dim)
    gate_up = bf16(1, 2 * c["intermediate_size"])
    return {"fused_add_rms_norm": lambda: ops.fused_add_rms_norm(x, residual, norm, c["rms_norm_eps"]),
            "rotary_embedding": lambda: ops.rotary_embedding(positions, q, k, head_dim, cos_sin, True),
            "silu_and_mul": lambda: ops.silu_and_mul(gate_up)}


def time_call(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def cold_times(calls: dict[str, Callable[[], object]], after_mib: list[int],
               repeat: int) -> dict[str, dict[str, float]]:
    """``{kernel: {"warm" | "after N MiB": median seconds}}``: each call timed right after itself, and right after
    reading each buffer, all of them alternating round after round."""
    from mini_platform import ops

    buffers = {f"after {mib} MiB": torch.ones(mib << 18) for mib in after_mib}   # 4-byte floats
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in calls}
    with torch.inference_mode(), ops.use_backend("cpu"):
        for call in calls.values():
            call()   # compiled kernels compile (or load from the disk cache) here
        for _ in range(repeat):
            for name, call in calls.items():
                call()
                samples[name].setdefault("warm", []).append(time_call(call))
                for label, buffer in buffers.items():
                    buffer.sum()
                    samples[name].setdefault(label, []).append(time_call(call))
    return {name: {label: statistics.median(times) for label, times in by.items()} for name, by in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", nargs="+", type=int, default=[2, 8, 32, 128])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from mini_platform.ops.cpu import compiled

    print(f"machine: {hostinfo.describe()}; torch {torch.__version__}, {args.threads} thread(s); "
          f"mini_platform's cpu kernels: {compiled.describe()}")
    results = cold_times(kernel_calls(), args.after, args.repeat)
    labels = ["warm", *(f"after {mib} MiB" for mib in args.after)]
    print(f"medians of {args.repeat} rounds, microseconds (x warm)")
    print(f"{'kernel call':24}" + "".join(f"{label:>20}" for label in labels))
    for name, by in results.items():
        cells = "".join(f"{by[label] * 1e6:>11.1f} (x{by[label] / by['warm']:4.1f})" for label in labels)
        print(f"{name:24}{cells}")
    print(f"machine at the end: {hostinfo.describe()}")


if __name__ == "__main__":
    main()
