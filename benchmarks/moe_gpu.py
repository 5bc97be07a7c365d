"""The Triton MoE kernels on an NVIDIA GPU: correctness against the CPU reference, and time against a
torch per-expert loop on the same GPU.

    python benchmarks/moe_gpu.py [--dtype bfloat16] [--tokens 1,16,128,1024]

Layer: Mixtral-8x7B's shape (H=4096, I=14336, E=8, K=2), random weights and seeded routing. The torch loop
is the CPU backend's ``fused_experts`` run on CUDA tensors (gather each expert's rows, two cuBLAS GEMMs,
``index_add``; it syncs with the host once per expert). Timing: median of CUDA-event runs after a warm-up.
The GPU is named next to the figures. It needs a GPU: without one it says so and exits 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
from hostinfo import cuda_time  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--tokens", default="1,16,128,1024")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--top-k", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark measures a GPU and has nothing to measure here", file=sys.stderr)
        return 2

    from mini_platform import ops

    dtype, h, inter, e, k = getattr(torch, args.dtype), args.hidden, args.intermediate, args.experts, args.top_k
    gen = torch.Generator(device="cuda").manual_seed(0)
    w13 = (torch.randn(e, 2 * inter, h, generator=gen, device="cuda") / h ** 0.5).to(dtype)
    w2 = (torch.randn(e, h, inter, generator=gen, device="cuda") / inter ** 0.5).to(dtype)
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, H={h} I={inter} E={e} K={k}, {args.dtype}")
    print(f"{'tokens':>7} {'max |triton - cpu ref|':>23} {'triton ms':>10} {'torch loop ms':>14} {'loop / triton':>14}")
    for t in (int(x) for x in args.tokens.split(",")):
        hidden = torch.randn(t, h, generator=gen, device="cuda").to(dtype)
        weights, ids = ops.moe_topk_softmax(torch.randn(t, e, generator=gen, device="cuda"), k, True, backend="triton")
        reference = ops.fused_experts(hidden.cpu().float(), w13.cpu().float(), w2.cpu().float(), weights.cpu(),
                                      ids.cpu(), backend="cpu") if t <= 128 else None
        triton_out = ops.fused_experts(hidden, w13, w2, weights, ids, backend="triton")
        error = "skipped (T > 128)" if reference is None else f"{(triton_out.float().cpu() - reference).abs().max():.3g}"
        a = cuda_time(lambda: ops.fused_experts(hidden, w13, w2, weights, ids, backend="triton"), repeat=10)
        b = cuda_time(lambda: ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu"), repeat=10)
        print(f"{t:>7} {error:>23} {a * 1e3:>10.3f} {b * 1e3:>14.3f} {b / a:>13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
