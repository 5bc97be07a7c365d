"""How long ``python practice/judge.py engine`` makes a learner wait: the whole run and each ``--chapter``.

    python benchmarks/engine_judge.py [--chapters 1 6 8] [--skip-whole]

A temporary practice folder whose workspace holds every engine exercise's solution (already judged once, so
the timings are the engine's, not the exercises'), and an empty engine cache of its own. For the whole run
and for each chapter, three cases, in this order:

- cold: nothing cached (checkpoints written, transformers run, every engine run);
- warm: the same files again (every engine read back from the cache);
- one changed: one of that chapter's files changed (a comment added), so its exercise is judged again and
  only the engines that call it run.

Prints the wall time of each and the number of engines read from the cache, and the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "practice"))
from judging import engine_parts, exercises  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/, for hostinfo
import hostinfo  # noqa: E402


def engine(root: Path, cache: Path, *args: str) -> tuple[float, dict]:
    env = {**os.environ, "MINI_PLATFORM_PRACTICE_DIR": str(root), "MINI_PLATFORM_JUDGE_CACHE": str(cache),
           "NO_COLOR": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "practice" / "judge.py"), "engine", "--json", *args],
                          capture_output=True, text=True, env=env, cwd=root)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"judge.py engine {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="*", type=int, default=None, help="default: every chapter with parts")
    parser.add_argument("--skip-whole", action="store_true", help="only the --chapter runs")
    args = parser.parse_args()
    parts = engine_parts.engine_exercises(exercises.PRACTICE_DIR)
    chapters = args.chapters or sorted({e.chapter for e in parts})
    print(f"machine: {hostinfo.describe()}")
    print(f"{'run':<14}{'cold':>9}{'warm':>9}{'one changed':>13}   engines from the cache (cold / warm / changed)")
    with tempfile.TemporaryDirectory(prefix="engine-judge-bench-") as tmp:
        cases = ([("whole", [], parts)] if not args.skip_whole else []) + \
            [(f"--chapter {n}", ["--chapter", str(n)], [e for e in parts if e.chapter == n]) for n in chapters]
        for label, flags, mine in cases:
            root = Path(tmp) / label.replace(" ", "").replace("-", "")
            (root / "workspace").mkdir(parents=True)
            for folder in exercises.exercise_dirs(exercises.PRACTICE_DIR):
                (root / folder.name).symlink_to(folder, target_is_directory=True)
            for exercise in parts:
                shutil.copy(exercise.file("solution.py"), root / "workspace" / f"{exercise.name}.py")
            cache = Path(tmp) / f"cache-{root.name}"
            engine(root, Path(tmp) / "scratch-cache", *flags)   # judges the files once (recorded), warms nothing used below
            times, cached = [], []
            for case in ("cold", "warm", "changed"):
                if case == "changed":
                    file = root / "workspace" / f"{mine[-1].name}.py"
                    file.write_text(file.read_text() + "\n# changed\n")
                seconds, result = engine(root, cache, *flags)
                if not result["equal"]:
                    sys.exit(f"{label} {case}: the engine is not equal to transformers: {result['difference']}")
                times.append(seconds)
                cached.append(result["cached_runs"])
            print(f"{label:<14}" + "".join(f"{t:>8.1f}s" for t in times[:2]) + f"{times[2]:>12.1f}s   "
                  + " / ".join(map(str, cached)) + f"   (changed: exercise {mine[-1].id})", flush=True)
    print(f"machine at the end: {hostinfo.describe()}")


if __name__ == "__main__":
    main()
