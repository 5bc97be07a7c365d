"""The recorded GPU check: the tests marked ``cuda`` and the GPU benchmarks, run on an NVIDIA machine in
under five minutes, written to one results file the chapters can show.

    python benchmarks/gpu_check.py [--out benchmarks/results]

Steps, each with its own time limit (their sum, five and a half minutes, is the budget):

1. ``MINI_PLATFORM_TRITON_GPU=1 python -m pytest -m cuda -q tests/test_cuda.py tests/test_distributed.py``:
   the Triton kernels compiled for this GPU against the CPU reference, the engine's greedy tokens on the GPU
   equal to the CPU engine's, the real CUDA-graph path, NCCL.
2. ``python benchmarks/decode_attention_gpu.py``: paged decode bandwidth against the GPU's own copy rate.
3. ``python benchmarks/moe_gpu.py``: the Triton grouped GEMM against a torch per-expert loop.
4. ``python benchmarks/gpu_check.py --mla-decode``: the Triton MLA decode (two stages, split KV) on DeepSeek-V3's
   shapes against the CPU backend's plain-torch reference run on the same GPU: agreement, zeros for requests of
   length 0, and the time of each.

Writes ``gpu_check.json`` and ``gpu_check.md`` under ``--out``: the hardware (``nvidia-smi`` and
``torch.cuda.get_device_name``), the date (UTC), the commit, and per step the command, exit status, seconds
and output. Exit 0 only when every step passed. Without an NVIDIA GPU it refuses (exit 2) and writes nothing;
on a CPU machine ``python benchmarks/triton_compile.py`` compiles the kernels without running them.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEPS = [  # (name, command, seconds allowed)
    ("tests marked cuda", [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
                           "tests/test_cuda.py", "tests/test_distributed.py"], 180),
    ("decode attention bandwidth", [sys.executable, "benchmarks/decode_attention_gpu.py"], 45),
    ("MoE grouped GEMM", [sys.executable, "benchmarks/moe_gpu.py"], 75),
    ("MLA decode", [sys.executable, "benchmarks/gpu_check.py", "--mla-decode"], 30),
]
OUTPUT_TAIL = 6000  # characters of each step's output kept in the results


def gpu_or_reason() -> tuple[dict | None, str]:
    """The GPU's description, or None and why there is none to check."""
    import torch

    if not torch.cuda.is_available():
        return None, (f"no NVIDIA GPU: torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is "
                      "False)")
    smi = shutil.which("nvidia-smi")
    query = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True).stdout.strip() if smi else "nvidia-smi not found"
    return {"torch_device_name": torch.cuda.get_device_name(), "nvidia_smi": query,
            "torch": torch.__version__, "cuda": torch.version.cuda}, ""


def run_step(name: str, command: list[str], limit: int) -> dict:
    env = {**os.environ, "MINI_PLATFORM_TRITON_GPU": "1"}
    env.pop("TRITON_INTERPRET", None)
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=limit)
        status, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        status = "timeout"
        output = "".join(x.decode() if isinstance(x, bytes) else (x or "") for x in (exc.stdout, exc.stderr))
    return {"name": name, "command": " ".join("python" if c == sys.executable else c for c in command),
            "limit_s": limit, "status": status, "seconds": round(time.perf_counter() - start, 1),
            "output": output[-OUTPUT_TAIL:]}


def check_mla_decode() -> int:
    """Step 4: ``mla_decode_attention`` on the triton backend against the cpu backend (plain torch, the
    specification), both on this GPU, at DeepSeek-V3's shapes (L=512, R=64, 16 heads, block size 16) with a
    request of length 0 among 32; fp32 and bf16. Prints the largest difference and the median time of each."""
    import torch
    import triton.testing

    from mini_platform import ops

    gen = torch.Generator(device="cuda").manual_seed(0)
    batch, heads, latent, rope, block_size, max_blocks = 32, 16, 512, 64, 16, 64
    failures = 0
    for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 1.6e-2)):
        rand = lambda *shape: torch.randn(*shape, generator=gen, device="cuda").to(dtype)  # noqa: E731
        caches = rand(batch * max_blocks, block_size, 1, latent), rand(batch * max_blocks, block_size, 1, rope)
        tables = torch.randperm(batch * max_blocks, generator=gen, device="cuda").view(batch, max_blocks).int()
        seq_lens = torch.randint(1, max_blocks * block_size + 1, (batch,), generator=gen, device="cuda").int()
        seq_lens[3] = 0
        args = (rand(batch, heads, latent), rand(batch, heads, rope), *caches, tables, seq_lens, 192 ** -0.5)
        got = ops.mla_decode_attention(*args, backend="triton")
        want = ops.mla_decode_attention(*args, backend="cpu")
        error = (got.float() - want.float()).abs().max().item()
        ok = error <= tol * max(1.0, want.float().abs().max().item()) and not got[3].any()
        times = [triton.testing.do_bench(lambda b=b: ops.mla_decode_attention(*args, backend=b))
                 for b in ("triton", "cpu")]
        print(f"{dtype}: max |triton - reference| = {error:.3g} ({'ok' if ok else 'TOO LARGE'}); triton "
              f"{times[0] * 1e3:.0f} us, torch reference {times[1] * 1e3:.0f} us on the same GPU "
              f"(B={batch}, heads={heads}, L={latent}, R={rope}, up to {max_blocks * block_size} tokens)")
        failures += not ok
    return 1 if failures else 0


def markdown(record: dict) -> str:
    lines = [f"# GPU check, {record['date']}", "",
             f"- GPU: {record['hardware']['torch_device_name']} (nvidia-smi: {record['hardware']['nvidia_smi']})",
             f"- torch {record['hardware']['torch']}, CUDA {record['hardware']['cuda']}, Triton {record['triton']}",
             f"- commit {record['commit']}; command `python benchmarks/gpu_check.py`", ""]
    for step in record["steps"]:
        verdict = "passed" if step["status"] == 0 else f"FAILED ({step['status']})"
        lines += [f"## {step['name']}: {verdict}, {step['seconds']} s", "", f"`{step['command']}`", "",
                  "```", step["output"].rstrip(), "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"), help="folder for the results files")
    parser.add_argument("--mla-decode", action="store_true", help="run only step 4 (the MLA decode check)")
    args = parser.parse_args()
    hardware, reason = gpu_or_reason()
    if hardware is not None and args.mla_decode:
        return check_mla_decode()
    if hardware is None:
        print(f"{reason}. This script runs the GPU tests and benchmarks and has nothing to run here; on a CPU "
              "machine, `python benchmarks/triton_compile.py` compiles every kernel for sm_80/sm_90/gfx942 "
              "without running it.", file=sys.stderr)
        return 2
    import triton

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    record = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit, "triton": triton.__version__, "hardware": hardware, "steps": []}
    for name, command, limit in STEPS:
        record["steps"].append(run_step(name, command, limit))
        print(f"{name}: status {record['steps'][-1]['status']} in {record['steps'][-1]['seconds']} s", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "gpu_check.md").write_text(markdown(record))
    print(f"wrote {out / 'gpu_check.md'} and {out / 'gpu_check.json'}")
    return 0 if all(step["status"] == 0 for step in record["steps"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
