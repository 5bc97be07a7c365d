"""Greedy generation from the command line with the reference (contiguous KV cache) model.

    python -m mini_platform.generate --make-tiny /tmp/tiny --arch qwen2 --seed 0   (or llama, qwen3, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3)
    python -m mini_platform.generate --model /tmp/tiny --prompt-ids 1,2,3 --max-tokens 8 [--backend triton]

The last line printed is the generated token ids, comma-separated. Bad input exits with status 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

BACKENDS = ("cpu", "triton", "npu")
TINY_ARCHS = ("llama", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3")  # mini_platform.model.tiny.ARCHITECTURES (no torch import here)
DTYPES = ("float32", "bfloat16", "float16")


def parse_ids(text: str) -> list[int]:
    """``"1,2,3"`` -> ``[1, 2, 3]`` (spaces allowed); an error says what was wrong."""
    parts = [p.strip() for p in text.split(",")]
    try:
        ids = [int(p) for p in parts]  # an empty item ("1,,2", "1,2,") is an error, not skipped
    except ValueError:
        raise argparse.ArgumentTypeError(f"prompt ids must be comma-separated integers like 1,2,3; got {text!r}") from None
    if not ids or any(i < 0 for i in ids):
        raise argparse.ArgumentTypeError(f"prompt ids must be one or more non-negative integers; got {text!r}")
    return ids


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mini_platform.generate", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, help="checkpoint directory (config.json + *.safetensors)")
    p.add_argument("--prompt-ids", type=parse_ids, help="prompt token ids, comma-separated, e.g. 1,2,3")
    p.add_argument("--max-tokens", type=int, default=16, help="new tokens to generate (default 16)")
    p.add_argument("--ignore-eos", action="store_true", help="do not stop at the checkpoint's EOS token")
    p.add_argument("--backend", choices=BACKENDS, help="kernel backend (default: the current platform's)")
    p.add_argument("--dtype", choices=DTYPES, default="float32",
                   help="dtype to compute in, whatever the checkpoint stores (default float32: token-for-token "
                        "comparisons with transformers need fp32 on both sides)")
    p.add_argument("--device", help="torch device for weights and cache (default: cuda for --backend triton "
                                    "when a GPU is present, else cpu)")
    p.add_argument("--make-tiny", type=Path, metavar="DIR", help="write a tiny random checkpoint to DIR and exit")
    p.add_argument("--arch", choices=TINY_ARCHS, default="llama", help="architecture for --make-tiny")
    p.add_argument("--seed", type=int, default=0, help="random seed for --make-tiny")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    import torch

    from .engine import resolve_device
    from .model import greedy_generate, load_model, make_tiny_checkpoint
    from .ops import KernelUnavailableError, current_backend, use_backend

    def fail(message: str) -> NoReturn:  # one line on stderr (no usage: the arguments were fine), exit status 2
        parser.exit(2, f"{parser.prog}: error: {message}\n")

    if args.make_tiny is not None:
        print(f"wrote a tiny random {args.arch} checkpoint to {make_tiny_checkpoint(args.make_tiny, args.arch, args.seed)}")
        return 0
    if args.model is None or args.prompt_ids is None:
        parser.error("--model and --prompt-ids are required (or use --make-tiny DIR to create a checkpoint)")
    if args.max_tokens < 1:
        parser.error(f"--max-tokens must be at least 1, got {args.max_tokens}")
    if not args.model.is_dir():
        parser.error(f"--model {args.model} is not a directory")
    try:
        backend = current_backend(args.backend)
        device = resolve_device(args.device or ("cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"))
    except ValueError as exc:  # a bad MINI_PLATFORM_KERNEL_BACKEND or --device
        fail(str(exc))
    if backend == "triton" and device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        # Must happen before the first @triton.jit, i.e. before the Triton kernel modules are imported.
        os.environ["TRITON_INTERPRET"] = "1"
        print("note: tensors are on the CPU, so the Triton kernels run in the Triton interpreter (TRITON_INTERPRET=1)")
    try:
        model = load_model(args.model, dtype=getattr(torch, args.dtype), device=device,
                           max_positions=len(args.prompt_ids) + args.max_tokens)
        with use_backend(backend):
            tokens = greedy_generate(model, args.prompt_ids, args.max_tokens, ignore_eos=args.ignore_eos)
    except (ValueError, FileNotFoundError, KernelUnavailableError, FloatingPointError) as exc:
        fail(str(exc))
    except ImportError as exc:  # e.g. --backend npu without torch_npu, --backend triton without triton
        fail(f"the {backend!r} kernel backend cannot run here: {exc}")
    print(f"model: {model.config.architecture} (stored as {model.config.dtype}, run in {args.dtype}), kernel backend: "
          f"{backend}, device: {device}, prompt: {len(args.prompt_ids)} tokens, generated: {len(tokens)}")
    print(",".join(map(str, tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
