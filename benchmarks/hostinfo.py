"""One line naming the machine a benchmark ran on, printed next to every figure; and the GPU timer the
GPU benchmarks share (torch is imported only when it is called)."""
from __future__ import annotations

import os
import platform


def describe() -> str:
    """CPU model, core count, OS, Python version and the load average at the time of the call."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, load average {load}")


def cuda_time(fn, repeat: int = 20) -> float:
    """Median seconds of ``fn()`` measured with CUDA events after a warm-up."""
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]
