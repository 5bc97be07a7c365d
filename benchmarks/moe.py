"""MoE on the CPU: the grouped (expert-sorted) path against a per-token loop, and the padding that
vLLM's ``moe_align_block_size`` costs.

1. Time, one run on this machine: ``ops.fused_experts`` on the CPU backend (gather each expert's rows, one
   GEMM pair per expert, ``index_add`` back) against the naive per-token loop (for each token and each of its
   K experts, a matrix-vector product pair). Layer: H=512, I=1024, E=8, K=2 (Mixtral's shape, scaled down),
   fp32, random routing from seeded logits. Printed: the median of ``--repeats`` runs and the ratio.
2. Arithmetic, machine-independent: ``num_tokens_post_padded / (T*K)`` of ``moe_align_block_size`` for block
   sizes 16..128 and T tokens, with E=8, K=2 (Mixtral) and E=60, K=4 (Qwen1.5-MoE-A2.7B), seeded uniform routing.
   Every expert that gets any token pads its run up to a multiple of the block size.

Run: ``python benchmarks/moe.py`` (add ``--quick`` for a short run).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.hostinfo import describe  # noqa: E402
from mini_platform import ops  # noqa: E402
from mini_platform.ops.triton.moe import moe_align_block_size  # noqa: E402  (pure torch; no kernel runs)


def per_token_loop(hidden: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, weights: torch.Tensor,
                   ids: torch.Tensor) -> torch.Tensor:
    """The layer token by token: K matrix-vector pairs per token, no sorting, no batching."""
    out = torch.zeros_like(hidden)
    for t in range(hidden.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            gate, up = (w13[e] @ hidden[t]).chunk(2)
            out[t] += weights[t, j] * (w2[e] @ (F.silu(gate) * up))
    return out


def median_seconds(fn, repeats: int) -> float:
    fn()   # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_grouped_vs_loop(token_counts: list[int], repeats: int) -> None:
    h, inter, e, k = 512, 1024, 8, 2
    g = torch.Generator().manual_seed(0)
    w13 = torch.randn(e, 2 * inter, h, generator=g) / h ** 0.5
    w2 = torch.randn(e, h, inter, generator=g) / inter ** 0.5
    print(f"1. grouped (sorted) vs per-token loop, H={h} I={inter} E={e} K={k}, fp32, torch threads "
          f"{torch.get_num_threads()}, median of {repeats}")
    print(f"{'tokens':>8} {'grouped ms':>11} {'per-token ms':>13} {'loop / grouped':>15}")
    for t in token_counts:
        hidden = torch.randn(t, h, generator=g)
        weights, ids = ops.moe_topk_softmax(torch.randn(t, e, generator=g), k, True, backend="cpu")
        grouped = ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu")
        torch.testing.assert_close(per_token_loop(hidden, w13, w2, weights, ids), grouped, atol=1e-3, rtol=1e-3)
        a = median_seconds(lambda: ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu"), repeats)
        b = median_seconds(lambda: per_token_loop(hidden, w13, w2, weights, ids), repeats)
        print(f"{t:>8} {a * 1e3:>11.2f} {b * 1e3:>13.2f} {b / a:>14.1f}x")


def padding_overhead(token_counts: list[int], block_sizes: list[int]) -> None:
    print("\n2. moe_align_block_size padding: padded rows / real rows (T*K), seeded uniform routing")
    for e, k, label in ((8, 2, "E=8, K=2 (Mixtral)"), (60, 4, "E=60, K=4 (Qwen1.5-MoE-A2.7B)")):
        print(f"{label}")
        print(f"{'tokens':>8} " + " ".join(f"{'bs=' + str(b):>8}" for b in block_sizes))
        g = torch.Generator().manual_seed(1)
        for t in token_counts:
            _, ids = torch.topk(torch.rand(t, e, generator=g), k, dim=-1)
            ratios = [int(moe_align_block_size(ids, b, e)[2]) / (t * k) for b in block_sizes]
            print(f"{t:>8} " + " ".join(f"{r:>8.2f}" for r in ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer token counts and repeats")
    args = parser.parse_args()
    print(f"machine: {describe()}")
    time_grouped_vs_loop([16, 128] if args.quick else [16, 128, 512], 3 if args.quick else 5)
    padding_overhead([1, 16, 256, 4096] if args.quick else [1, 4, 16, 64, 256, 1024, 4096], [16, 32, 64, 128])


if __name__ == "__main__":
    main()
