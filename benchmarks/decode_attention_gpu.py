"""Paged decode attention bandwidth on an NVIDIA GPU, as a fraction of the GPU's own copy rate.

    python benchmarks/decode_attention_gpu.py [--batch 64] [--context 4096]

Decode attention reads every cached K and V byte once per step, so its speed is bounded by memory
bandwidth. The script measures the device-to-device copy rate of a large tensor and the Triton
paged decode kernel's effective rate (K/V bytes read / kernel time) in the same run, and prints both
and their ratio with the GPU named. It needs a GPU: without one it says so and exits 2.
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
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--block-size", type=int, default=16)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark measures a GPU and has nothing to measure here", file=sys.stderr)
        return 2

    from mini_platform import ops

    B, L, bs = args.batch, args.context, args.block_size
    blocks_per_seq = -(-L // bs)
    num_blocks = B * blocks_per_seq
    dtype, dev = torch.bfloat16, "cuda"
    cache_shape = (num_blocks, bs, args.kv_heads, args.head_dim)
    key_cache = torch.randn(cache_shape, dtype=dtype, device=dev)
    value_cache = torch.randn(cache_shape, dtype=dtype, device=dev)
    block_tables = torch.randperm(num_blocks, device=dev).to(torch.int32).view(B, blocks_per_seq)
    seq_lens = torch.full((B,), L, dtype=torch.int32, device=dev)
    query = torch.randn(B, args.heads, args.head_dim, dtype=dtype, device=dev)
    scale = args.head_dim ** -0.5

    attn_s = cuda_time(lambda: ops.paged_decode_attention(query, key_cache, value_cache, block_tables, seq_lens,
                                                          scale, backend="triton"))
    kv_bytes = 2 * B * L * args.kv_heads * args.head_dim * key_cache.element_size()
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    copy_s = cuda_time(lambda: dst.copy_(src))
    copy_rate = 2 * src.numel() / copy_s          # a copy reads and writes every byte
    attn_rate = kv_bytes / attn_s

    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"decode: batch {B}, context {L}, heads {args.heads}/{args.kv_heads}, head_dim {args.head_dim}, "
          f"block {bs}, bf16; K/V read per step {kv_bytes / 1e9:.2f} GB")
    print(f"device copy rate:          {copy_rate / 1e12:.2f} TB/s")
    print(f"paged decode (Triton):     {attn_rate / 1e12:.2f} TB/s in {attn_s * 1e3:.3f} ms")
    print(f"decode / copy rate:        {attn_rate / copy_rate:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
