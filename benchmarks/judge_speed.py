"""Wall time of the judge next to the least a pytest run costs, in one run.

    python benchmarks/judge_speed.py [ID ...] [--repeat N]     (default: exercise 180, 7 runs)
    python benchmarks/judge_speed.py --all [--repeat N]        every pure-Python exercise

For each exercise's solution and starter, times ``python practice/judge.py ID FILE`` (a fresh,
isolated child process per judgement, exactly what a learner runs) and, interleaved with it so that
the machine's load falls on both alike:

- ``python -c "import pytest"``: starting Python and importing pytest;
- ``pytest empty``: ``python -m pytest -q -p no:cacheprovider`` collecting an empty test file with plugin
  autoload off (as the judge's child runs pytest): the least any pytest run costs. The goal is
  judge / pytest-empty <= 1.5;
- ``pytest test.py``: the exercise's own test file against that code, outside the judge.

Also prints the part of the judge's time spent running the tests in the child (judge_core.run_tests,
from ``--json``): the goal is under 0.5 s for every pure-Python exercise on 2 cores. Medians of
``--repeat`` runs; the machine and its load are printed. Run it on an idle machine.
"""
from __future__ import annotations

import argparse
import json
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

GOAL_RATIO, GOAL_TESTS_S = 1.5, 0.5


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done


def measure(exercise: exercises.Exercise, name: str, repeat: int) -> dict[str, float]:
    """Median wall times of the judge and the three baselines, and the median test time inside the judge."""
    expect = 0 if name == "solution.py" else 1
    env = {k: v for k, v in os.environ.items() if k != "MINI_PLATFORM_LANG"}
    autoload_off = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with tempfile.TemporaryDirectory(prefix="judge-speed-") as tmp:
        folder = Path(tmp)
        shutil.copyfile(exercise.file("test.py"), folder / "test.py")
        shutil.copyfile(exercise.file(name), folder / "submission.py")
        (folder / "test_empty.py").write_text("")
        pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        commands = {
            "judge": ([sys.executable, str(ROOT / "practice" / "judge.py"), str(exercise.id),
                       str(folder / "submission.py"), "--json"], ROOT, env, (expect,)),
            "import pytest": ([sys.executable, "-c", "import pytest"], folder, env, (0,)),
            "pytest empty": ([*pytest_cmd, "test_empty.py"], folder, autoload_off, (5,)),   # 5: no tests collected
            "pytest test.py": ([*pytest_cmd, "test.py"], folder, autoload_off, (expect,)),
        }
        times: dict[str, list[float]] = {label: [] for label in commands}
        tests: list[float] = []
        for _ in range(repeat):
            for label, (cmd, cwd, run_env, codes) in commands.items():
                seconds, done = timed(cmd, cwd, run_env)
                if done.returncode not in codes:
                    sys.exit(f"{' '.join(cmd)} exited {done.returncode}, expected {codes}: not a valid measurement\n"
                             f"{done.stderr[-2000:]}")
                times[label].append(seconds)
                if label == "judge":
                    tests.append(json.loads(done.stdout)["duration"])
    medians = {label: statistics.median(values) for label, values in times.items()}
    medians["tests in judge"] = statistics.median(tests)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", default=None)
    parser.add_argument("--all", action="store_true", help="every exercise that runs without torch")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    chosen = [e for e in exercises.discover() if not e.requires] if args.all else \
        [exercises.find(i) for i in (args.ids or ["180"])]
    print(f"machine: {hostinfo.describe()}; median of {args.repeat} runs each, interleaved")
    labels = ("judge", "import pytest", "pytest empty", "pytest test.py", "tests in judge")
    print(f"{'exercise':<30}{'code':<13}" + "".join(f"{label:>16}" for label in labels) + f"{'judge/empty':>13}")
    worst_ratio, worst_tests = (0.0, ""), (0.0, "")
    for exercise in chosen:
        for name in ("solution.py", "starter.py"):
            row = measure(exercise, name, args.repeat)
            ratio = row["judge"] / row["pytest empty"]
            worst_ratio = max(worst_ratio, (ratio, f"{exercise.name} {name}"))
            worst_tests = max(worst_tests, (row["tests in judge"], f"{exercise.name} {name}"))
            print(f"{exercise.name:<30}{name:<13}" + "".join(f"{row[label]:>15.3f}s" for label in labels)
                  + f"{ratio:>13.2f}", flush=True)
    print(f"largest judge / pytest-empty: {worst_ratio[0]:.2f} ({worst_ratio[1]}); goal <= {GOAL_RATIO}")
    print(f"longest test run inside the judge: {worst_tests[0]:.3f} s ({worst_tests[1]}); goal < {GOAL_TESTS_S} s")
    print(f"machine at the end: {hostinfo.describe()}")


if __name__ == "__main__":
    main()
