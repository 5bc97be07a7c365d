"""The recorded GPU check: the tests marked ``cuda`` and the GPU benchmarks, run on an NVIDIA machine in
under five minutes, written to one results file the chapters can show.

    python benchmarks/gpu_check.py [--out benchmarks/results]

Steps, each with its own time limit (their sum is the five-minute budget):

1. ``MINI_PLATFORM_TRITON_GPU=1 python -m pytest -m cuda -q tests/test_cuda.py tests/test_distributed.py``:
   the Triton kernels compiled for this GPU against the CPU reference, the engine's greedy tokens on the GPU
   equal to the CPU engine's, the real CUDA-graph path, NCCL.
2. ``python benchmarks/decode_attention_gpu.py``: paged decode bandwidth against the GPU's own copy rate.
3. ``python benchmarks/moe_gpu.py``: the Triton grouped GEMM against a torch per-expert loop.

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
    args = parser.parse_args()
    hardware, reason = gpu_or_reason()
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
