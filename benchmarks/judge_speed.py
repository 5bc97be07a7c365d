"""Wall time of the judge next to a bare pytest run of the same test file.

    python benchmarks/judge_speed.py [ID] [--repeat N]      (default: exercise 180, 5 runs)

For the exercise's solution and starter, times ``python practice/judge.py ID FILE`` (a fresh,
isolated child process per judgement, exactly what a learner runs) and
``python -m pytest -q test.py`` in a folder holding the test file and that code as submission.py,
once as is and once with PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 (as the judge's child runs it).
Prints the median and fastest of each, the ratio judge / pytest, and the machine. The numbers
depend on what else the machine is doing: run it on an idle machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "practice"))
from judging import exercises  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402


def timed(cmd: list[str], cwd: Path, repeat: int, expect: int, **env: str) -> list[float]:
    """Wall times of ``repeat`` runs; each must exit with ``expect`` (else the time measured nothing)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **env})
        times.append(time.perf_counter() - start)
        if done.returncode != expect:
            sys.exit(f"{' '.join(cmd)} exited {done.returncode}, expected {expect}: not a valid measurement")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("id", nargs="?", default="180")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    exercise = exercises.find(args.id)
    print(f"exercise {exercise.name}; machine: {hostinfo.describe()}; {args.repeat} runs each")
    print(f"{'code':<13}{'command':<34}{'median':>9}{'min':>9}{'judge/this':>12}")
    for name, expect in (("solution.py", 0), ("starter.py", 1)):
        with tempfile.TemporaryDirectory(prefix="judge-speed-") as tmp:
            folder = Path(tmp)
            shutil.copyfile(exercise.file("test.py"), folder / "test.py")
            shutil.copyfile(exercise.file(name), folder / "submission.py")
            pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test.py"]
            rows = {
                f"python practice/judge.py {exercise.id} FILE": timed(
                    [sys.executable, str(ROOT / "practice" / "judge.py"), str(exercise.id),
                     str(folder / "submission.py")], ROOT, args.repeat, expect),
                "python -m pytest test.py": timed(pytest_cmd, folder, args.repeat, expect),
                "  same, plugin autoload off": timed(pytest_cmd, folder, args.repeat, expect,
                                                      PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"),
            }
        judge = statistics.median(next(iter(rows.values())))
        for label, times in rows.items():
            print(f"{name:<13}{label:<34}{statistics.median(times):>8.3f}s{min(times):>8.3f}s"
                  f"{judge / statistics.median(times):>12.2f}")


if __name__ == "__main__":
    main()
