"""The local judge of the course exercises: ``python practice/judge.py 180``.

    python practice/judge.py 180 [FILE]    judge the workspace file (created from the starter) or FILE
    python practice/judge.py list | show ID | hint ID | solution ID | doctor | check [IDS] | reset ID
    python practice/judge.py engine [--parts 194,213 | --chapter 6]   the engine with your accepted parts (judging/engine_parts.py)

This module is the command line (``practice/judge.py`` only imports it: a module's bytecode is cached,
a script's is compiled on every run). Each judgement runs in an isolated child process (practice/judging/sandbox.py:
limits, process groups, strays, the verdict read only from a token-stamped result file); the
verdict is printed by practice/judging/render.py, the renderer the site's browser runner shares; progress
(last and best verdict, hints shown) lives in practice/judging/progress.py.

Statuses: those of judge_core (accepted, wrong_answer, error, syntax_error, import_error,
memory_limit, output_limit, no_tests, interrupted) plus ``timeout`` and ``crashed`` (sandbox.py).
Exit status: 0 accepted, 1 any other verdict, 2 bad input (unknown id, missing file, bad exercise);
for ``engine``: 0 when the assembled engine equals transformers, 1 when not, 2 on bad input.

``--json`` prints judge_core's verdict schema plus: exercise (id), file, exit_code (the child's),
wall_time, timeout, memory_limit_mb, process_output / process_stderr, and for a run that did not report
running / triton_interpreter (see sandbox.py); ``engine --json``
prints engine_parts.summarize's result (status, equal, one row per part, difference, culprit).
The last and best verdict of each exercise's workspace file are kept in practice/.judge_state.json
(git-ignored); judging another file records nothing.
A project exercise (the capstone: its files name a folder, PROJECT, see judging/exercises.py) is
reported as that folder: the header, the "edit" line and ``solution`` (the reference project's files).
Environment: NO_COLOR, MINI_PLATFORM_LANG (default language), MINI_PLATFORM_PRACTICE_DIR (another
folder of exercises, with its own workspace and state; used by the tests), MINI_PLATFORM_WORKSPACE
(another folder for the workspace files and the state; the site build's empty one, see judging/progress.py).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path

from . import exercises, render, sandbox
from .exercises import PRACTICE_DIR, Exercise, ExerciseError
from .progress import Progress, file_digest, solved
from .sandbox import MEMORY_MB, memory_limit_mb, run_batch, run_isolated  # noqa: F401

# Where exercises, the workspace and the state file live; tests point it at a temporary folder.
ROOT = Path(os.environ.get("MINI_PLATFORM_PRACTICE_DIR") or PRACTICE_DIR).resolve()
PROGRESS = Progress(ROOT)
WORKSPACE = PROGRESS.workspace
REPO = PRACTICE_DIR.parent   # a project exercise's PROJECT is relative to it (practice/capstone/harness.py)
SOLUTION_AFTER = 3   # failed runs after which the reference solution may be shown (with a confirmation)
LANG = "zh"


def tr(zh: str, en: str) -> str:
    return en if LANG == "en" else zh


class Style:
    """ANSI colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""

    def __init__(self, stream) -> None:
        self.on = stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text


class UsageError(ExerciseError):
    """Bad input on the command line; printed in both languages without a traceback, exit status 2."""


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _project(file: Path) -> Path | None:
    """The folder a project exercise's file names (PROJECT, relative to the repository root), or None."""
    project = exercises.project_of(file)
    return None if project is None else (REPO / project).resolve()


def _relative_paths(verdict: dict) -> dict:
    """The verdict with paths under the current directory (the learner's own files, as the child saw
    their real paths) written relative to it, as the learner typed them."""
    here = str(Path.cwd()) + os.sep
    shown = {**verdict, "tests": [dict(t) for t in verdict.get("tests", [])]}
    for item in (shown, *shown["tests"]):
        for key in ("message", "details"):
            if isinstance(item.get(key), str):
                item[key] = item[key].replace(here, "")
    return shown


def _next_exercise(exercise: Exercise) -> Exercise | None:
    later = [p for p in exercises.exercise_dirs(ROOT) if int(p.name[:3]) > exercise.id]
    for path in later:
        try:
            return exercises.load_exercise(path)
        except ExerciseError:
            continue
    return None


# ----------------------------------------------------------------------------------------------
# Commands


def cmd_judge(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    _require_runnable(exercise)
    if args.file:
        file = Path(args.file)
        if not file.is_file():
            raise UsageError(f"找不到要评测的文件：{file}", f"no such file to judge: {file}")
    else:
        file = PROGRESS.workspace_file(exercise)
        if PROGRESS.ensure_workspace(exercise) and not args.json:
            print(exercise.statement(LANG))
            project = _project(file)
            if project is not None:
                print(tr(f"已创建 {_display(file)}：它指向你的项目 {_display(project)}/，这一阶段评测的是那个项目（做法见上面的题目）。\n",
                         f"Created {_display(file)}: it names your project {_display(project)}/, which this stage judges "
                         "(see the statement above for how to make it).\n"))
            else:
                print(tr(f"已从起始代码创建 {_display(file)}：在这个文件里写你的答案，然后再运行这条命令。\n",
                         f"Created {_display(file)} from the starter: write your answer there, then run this command again.\n"))
    timeout = args.timeout if args.timeout is not None else exercise.timeout
    digest = file_digest(file)   # of what is judged, even if the file is saved again meanwhile
    verdict = run_isolated(exercise, file, timeout, args.memory or memory_limit_mb(exercise), LANG)
    verdict.update(exercise=exercise.id, file=str(file))
    entry = None
    if file.resolve() == PROGRESS.workspace_file(exercise).resolve():   # progress is the workspace's verdict only
        entry = PROGRESS.record(exercise, verdict, file, digest)
    if args.json:
        print(json.dumps(verdict, ensure_ascii=False, indent=1))
        return 0 if verdict["status"] == "accepted" else 1
    style = Style(sys.stdout)
    project = _project(file)
    judged = f"{_display(project)}/, " + tr(f"由 {_display(file)} 指定", f"named by {_display(file)}") if project else _display(file)
    print(style(f"[{exercise.id}] {tr(exercise.title, exercise.title_en)}", "1") + f"  ({judged})")
    model = render.view(_relative_paths(verdict))
    print(render.text(model, LANG, style, verdict.get("wall_time", 0)))
    if project is None and any(group.get("case") for group in model["groups"]):
        load = f"exec(open({_display(file)!r}).read())"
        print(tr(f"重现失败的用例：在 Python 里先载入你的文件 {load}，再粘贴上面的用例。",
                 f"To rerun a failing case: in Python, load your file with {load}, then paste the case above."))
    if verdict["status"] == "accepted":
        following = _next_exercise(exercise)
        print(tr(f"参考答案（可以对照）：python practice/judge.py solution {exercise.id}",
                 f"Compare with the reference: python practice/judge.py solution {exercise.id}"))
        if following:
            print(tr(f"下一题：python practice/judge.py {following.id}   （{following.title}）",
                     f"Next: python practice/judge.py {following.id}   ({following.title_en})"))
    else:
        if project is not None:
            print(tr(f"修改你的项目 {_display(project)}/ 后重新运行：python practice/judge.py {exercise.id}",
                     f"Edit your project {_display(project)}/ and run again: python practice/judge.py {exercise.id}"))
        elif not args.file:
            print(tr(f"修改 {_display(file)} 后重新运行：python practice/judge.py {exercise.id}",
                     f"Edit {_display(file)} and run again: python practice/judge.py {exercise.id}"))
        if exercise.hints():
            print(tr(f"需要提示：python practice/judge.py hint {exercise.id}",
                     f"Need a hint: python practice/judge.py hint {exercise.id}"))
        if entry and solved(entry):
            print(tr("（这道题你之前已经通过了，进度不会丢。）", "(You solved this one before; that stays recorded.)"))
    return 0 if verdict["status"] == "accepted" else 1


def _missing_requirements(exercise: Exercise) -> list[str]:
    return [name for name in exercise.requires if importlib.util.find_spec(name) is None]


def _require_runnable(exercise: Exercise) -> None:
    missing = _missing_requirements(exercise)
    if missing:
        raise UsageError(f"练习 {exercise.id} 需要 {', '.join(missing)}，这台机器上没有安装。"
                         "安装：pip install -r requirements.txt（torch_npu 见 requirements-ascend.txt）。",
                         f"exercise {exercise.id} needs {', '.join(missing)}, which is not installed here. "
                         "Install: pip install -r requirements.txt (torch_npu: requirements-ascend.txt).")


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "█" * filled + "░" * (width - filled)


def _summary(last: dict | None) -> str:
    return f"{render.status_text(last['status'], LANG)} {last['passed']}/{last['total']}  {last['at']}" if last else ""


def cmd_list(args) -> int:
    state = PROGRESS.load()
    rows = []
    for path in exercises.exercise_dirs(ROOT):
        try:
            exercise = exercises.load_exercise(path)
        except ExerciseError as exc:
            rows.append({"id": int(path.name[:3]), "name": path.name, "error": tr(exc.zh, exc.en)})
            continue
        entry = state.get(str(exercise.id)) if isinstance(state.get(str(exercise.id)), dict) else {}
        rows.append({"id": exercise.id, "name": exercise.name, "title": tr(exercise.title, exercise.title_en),
                     "chapter": exercise.chapter, "difficulty": exercise.difficulty,
                     "requires": list(exercise.requires), "last": entry or None, "solved": solved(entry)})
    good = [row for row in rows if "error" not in row]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    style = Style(sys.stdout)
    chapter = None
    for row in rows:
        if "error" in row:
            print(style(f"{row['id']}  {row['name']}  {tr('练习格式有误：', 'broken exercise: ')}{row['error']}", "31"))
            continue
        if row["chapter"] != chapter:
            chapter = row["chapter"]
            mine = [r for r in good if r["chapter"] == chapter]
            done = sum(r["solved"] for r in mine)
            print(style(tr(f"第 {chapter} 章", f"Chapter {chapter}"), "1")
                  + f"  {_bar(done, len(mine), 10)}  " + tr(f"{done}/{len(mine)} 已通过", f"{done}/{len(mine)} solved"))
        last = row["last"]
        mark = style("✓", "32") if row["solved"] else ("·" if not last else style("✗", "31"))
        needs = ",".join(row["requires"]) or tr("纯 Python", "pure Python")
        print(f"  {mark} {row['id']}  {row['difficulty']:<6}  {needs:<14} {row['title']}")
        if last:
            best = last.get("best")
            shown = (tr("已通过", "solved") + f" ({best['at']})") if row["solved"] and best else ""
            latest = tr("最近：", "last: ") + _summary(last)
            print(f"         {style(shown, '32') + '  ' if shown else ''}{latest}")
        else:
            print("         " + tr("未评测", "not judged"))
    if not rows:
        print(tr("还没有练习。", "No exercises yet."))
    else:
        done = sum(r["solved"] for r in good)
        print(style(tr("总计", "Total"), "1") + f"  {_bar(done, len(good))}  "
              + tr(f"{done}/{len(good)} 已通过", f"{done}/{len(good)} solved"))
    return 0


def cmd_hint(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    hints = exercise.hints()
    if not hints:
        print(tr(f"练习 {exercise.id} 还没有提示。", f"Exercise {exercise.id} has no hints yet."))
        return 1
    shown = min(PROGRESS.hints_shown(exercise), len(hints))
    new = shown < len(hints)
    count = shown + 1 if new else len(hints)
    if new:
        PROGRESS.set_hints_shown(exercise, count)
    style = Style(sys.stdout)
    for number, hint in enumerate(hints[:count], start=1):
        label = tr(f"提示 {number}/{len(hints)}", f"Hint {number}/{len(hints)}")
        fresh = number == count and new
        print(style(label + (tr("（新）", " (new)") if fresh else ""), "1" if fresh else "2"))
        print(hint["en" if LANG == "en" else "zh"] + "\n")
    if count < len(hints):
        print(tr(f"还有 {len(hints) - count} 个提示：再运行 python practice/judge.py hint {exercise.id}",
                 f"{len(hints) - count} more: run python practice/judge.py hint {exercise.id} again"))
    else:
        print(tr(f"这是最后一个提示。参考答案：python practice/judge.py solution {exercise.id}",
                 f"That was the last hint. Reference solution: python practice/judge.py solution {exercise.id}"))
    return 0


def cmd_solution(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    entry = PROGRESS.entry(exercise.id)
    if not solved(entry):
        failed = entry.get("failed_runs", 0)
        if failed < SOLUTION_AFTER:
            print(tr(f"先自己试试：通过之后，或者评测未通过 {SOLUTION_AFTER} 次之后（现在 {failed} 次），可以查看参考答案。"
                     f"提示：python practice/judge.py hint {exercise.id}",
                     f"Try it yourself first: the reference is shown once you are accepted, or after {SOLUTION_AFTER} "
                     f"runs that were not (so far {failed}). Hints: python practice/judge.py hint {exercise.id}"))
            return 1
        if not args.yes:
            question = tr("还没有通过。确定要看参考答案吗？[y/N] ", "Not solved yet. Show the reference solution anyway? [y/N] ")
            if not sys.stdin.isatty():
                print(tr("还没有通过；确定要看的话加上 --yes。", "Not solved yet; add --yes to see it anyway."))
                return 1
            if input(question).strip().lower() not in ("y", "yes", "是"):
                return 1
    project = _project(exercise.file("solution.py"))
    if project is None:
        print(exercise.file("solution.py").read_text(encoding="utf-8"), end="")
        return 0
    print(tr(f"参考答案是整个项目 {_display(project)}/：", f"The reference is the whole project {_display(project)}/:"))
    for path in sorted(p for p in project.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        print(f"\n==> {_display(path)} <==")
        print(path.read_text(encoding="utf-8", errors="replace"), end="")
    yours = _project(PROGRESS.workspace_file(exercise))
    if yours is not None and yours.is_dir():
        print(tr(f"\n对照你的项目：diff -ru {_display(project)} {_display(yours)}",
                 f"\nCompare with your project: diff -ru {_display(project)} {_display(yours)}"))
    return 0


def cmd_show(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    print(f"[{exercise.id}] {tr(exercise.title, exercise.title_en)}  "
          f"({tr('第', 'chapter ')}{exercise.chapter}{tr('章', '')}, {exercise.difficulty}, "
          f"{','.join(exercise.requires) or tr('纯 Python', 'pure Python')}, {exercise.timeout}s)\n")
    print(exercise.statement(LANG))
    print(tr(f"评测：python practice/judge.py {exercise.id}   （答案写在 {_display(PROGRESS.workspace_file(exercise))}）",
             f"Judge: python practice/judge.py {exercise.id}   (write your answer in {_display(PROGRESS.workspace_file(exercise))})"))
    return 0


def cmd_reset(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    target = PROGRESS.workspace_file(exercise)
    if target.exists():
        backup_dir = WORKSPACE / "backup"
        backup_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = backup_dir / f"{exercise.name}.{stamp}.py"
        n = 1
        while backup.exists():
            backup, n = backup_dir / f"{exercise.name}.{stamp}-{n}.py", n + 1
        shutil.copy2(target, backup)
        print(tr(f"原文件已备份到 {_display(backup)}", f"Backed up the old file to {_display(backup)}"))
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    target.write_text(exercise.file("starter.py").read_text(encoding="utf-8"), encoding="utf-8")
    print(tr(f"{_display(target)} 已恢复为起始代码。", f"{_display(target)} is the starter again."))
    return 0


def cmd_doctor(args) -> int:
    import importlib.metadata
    import platform

    def version(dist: str) -> str | None:
        if importlib.util.find_spec(dist.replace("-", "_")) is None:
            return None
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "?"

    gpu = Path("/dev/nvidia0").exists()
    npu = any(Path("/dev").glob("davinci[0-9]*"))
    info = {
        "python": f"{platform.python_version()} ({sys.executable})",
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu_count": os.cpu_count(),
        "pytest": version("pytest"), "torch": version("torch"), "triton": version("triton"),
        "torch_npu": version("torch_npu"), "mini_platform": version("mini-platform"),
        "nvidia_gpu": gpu, "ascend_npu": npu,
        "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET") or
        (tr("未设置（没有 GPU 时评测会自动设为 1）", "unset (the judge sets 1 when there is no GPU)") if not gpu else "unset"),
        "memory_limit_mb": MEMORY_MB,
    }
    runnable, broken = {}, []
    for path in exercises.exercise_dirs(ROOT):
        try:
            exercise = exercises.load_exercise(path)
        except ExerciseError as exc:
            broken.append(f"{path.name}: {tr(exc.zh, exc.en)}")
            continue
        missing = _missing_requirements(exercise)
        how = tr("可以", "yes") if not missing else tr(f"不行（缺 {', '.join(missing)}）", f"no (missing {', '.join(missing)})")
        if not missing and "triton" in exercise.requires and not gpu:
            how = tr("可以（Triton 解释器，CPU 上运行）", "yes (Triton interpreter, on the CPU)")
        runnable[exercise.id] = how
    if args.json:
        print(json.dumps({**info, "exercises": runnable, "broken": broken}, ensure_ascii=False, indent=1))
        return 0
    for key, value in info.items():
        shown = value if value not in (None, False) else tr("没有", "no")
        print(f"{key:<18} {'yes' if value is True else shown}")
    print(tr("练习是否能在本机运行：", "Exercises runnable here:"))
    for exercise_id, how in runnable.items():
        print(f"  {exercise_id}  {how}")
    for line in broken:
        print(f"  {line}")
    if info["pytest"] is None:
        print(tr("缺少 pytest：pip install -r requirements.txt", "pytest is missing: pip install -r requirements.txt"))
        return 1
    return 0


def cmd_engine(args) -> int:
    from . import engine_parts   # imported here: judging one exercise does not need it

    every = engine_parts.engine_exercises(ROOT)
    if args.parts is not None and args.chapter is not None:
        raise UsageError("--parts 和 --chapter 只能用一个。", "give --parts or --chapter, not both.")
    selected = engine_parts.select_chapter(args.chapter, every) if args.chapter is not None \
        else engine_parts.select(args.parts, every, ROOT)
    if not every:
        raise UsageError("没有练习声明引擎部件（problem.md 里的 engine:）。", "no exercise declares engine parts (engine: in problem.md).")
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"judge.py engine 需要 {', '.join(missing)}：pip install -r requirements.txt",
                         f"judge.py engine needs {', '.join(missing)}: pip install -r requirements.txt")
    timeout = args.timeout or engine_parts.TIMEOUT
    memory = args.memory or engine_parts.MEMORY_MB
    choices = engine_parts.choose(selected, PROGRESS, LANG)
    started = time.monotonic()

    def progress(line: str) -> None:   # one line per engine run, on stderr (stdout stays the result)
        stage, _, name = line.partition(" ")
        if name.endswith(" (cached)"):
            name = name[:-len(" (cached)")] + tr("（来自缓存）", " (from the cache)")
        label = engine_parts.STAGES.get(stage, (stage, stage))[1 if LANG == "en" else 0]
        print(f"  [{time.monotonic() - started:5.1f} s] {label}: {name}", file=sys.stderr, flush=True)

    chapters = engine_parts.chapters_of(selected, args.chapter, every)
    cache = None if args.no_cache else sandbox.cache_folder("engine")
    report = engine_parts.run(choices, every, timeout, memory, chapters, progress, cache)
    summary = engine_parts.summarize(choices, report, LANG, timeout, memory)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
    else:
        print(engine_parts.text(summary, LANG, Style(sys.stdout)))
        print(tr(f"用时 {summary['wall_time']:.1f} 秒，引擎运行了 {summary['runs']} 遍。",
                 f"{summary['wall_time']:.1f} s, {summary['runs']} engine runs."))
        if summary["cached_runs"]:
            print(tr(f"其中 {summary['cached_runs']} 个引擎的结果来自缓存（输入没有变：同样的 mini_platform 源码、同样的部件文件；"
                     "--no-cache 全部重跑）。",
                     f"{summary['cached_runs']} engine results came from the cache (their inputs are unchanged: the same "
                     "mini_platform source, the same part files; --no-cache runs everything)."))
    return 0 if summary["equal"] else 1


def _first_failure(verdict: dict) -> str:
    """The first test that did not pass, with its message (the verdict's message when none ran), short."""
    first = next((t for t in verdict["tests"] if t["outcome"] != "passed"), None)
    return (first["name"] + ": " + first["message"] if first else verdict["message"]).strip()[:300]


def check_exercise(exercise: Exercise) -> dict:
    """Maintainer checks for one exercise, judged in one child process (sandbox.run_batch):
    {"problems": [...], "warnings": [...], "skipped": reason or "", "wrong": [{"file", "status", "mistake"}],
    "right": [{"file", "status", "how"}]}."""
    report = {"problems": exercises.validate_layout(exercise), "warnings": exercises.layout_warnings(exercise),
              "skipped": "", "wrong": [], "right": []}
    missing = _missing_requirements(exercise)
    if missing:
        report["skipped"] = tr(f"跳过：需要 {', '.join(missing)}", f"skipped: needs {', '.join(missing)}")
        return report
    wrong, right = exercise.wrong_solutions(), exercise.right_solutions()
    files = [exercise.file("solution.py"), exercise.file("starter.py"), *wrong, *right]
    solution, starter, *judged = run_batch(exercise, files, exercise.timeout, memory_limit_mb(exercise), LANG)
    judged, judged_right = judged[:len(wrong)], judged[len(wrong):]
    problems = report["problems"]
    if solution["status"] != "accepted":
        why = _first_failure(solution)
        problems.append(tr(f"solution.py 没有通过：{solution['status']}（{why}）",
                           f"solution.py is not accepted: {solution['status']} ({why})"))
    if starter["status"] == "accepted":
        problems.append(tr("starter.py 通过了测试（它必须失败）", "starter.py passes the tests (it must fail them)"))
    elif starter["status"] not in ("wrong_answer", "error") or not starter["counts"]["total"]:
        problems.append(tr(f"starter.py 必须能正常导入并让测试失败，实际是 {starter['status']}：{starter['message'][:300]}",
                           f"starter.py must import cleanly and fail the tests, got {starter['status']}: "
                           f"{starter['message'][:300]}"))
    for path, verdict in zip(wrong, judged):
        report["wrong"].append({"file": f"wrong/{path.name}", "status": verdict["status"],
                                "mistake": exercises.mistake(path)})
        if verdict["status"] == "accepted":
            problems.append(tr(f"wrong/{path.name} 通过了测试（错误解法必须被拒绝；测试漏掉了：{exercises.mistake(path)}）",
                               f"wrong/{path.name} is accepted (a wrong solution must be rejected; the tests miss: "
                               f"{exercises.mistake(path)})"))
    for path, verdict in zip(right, judged_right):
        how = exercises.mistake(path, exercises.CORRECT_PREFIX)
        report["right"].append({"file": f"right/{path.name}", "status": verdict["status"], "how": how})
        if verdict["status"] != "accepted":
            why = _first_failure(verdict)
            problems.append(tr(f"right/{path.name} 被拒绝（正确的另一种写法必须通过：{how}；{why}）",
                               f"right/{path.name} is rejected (a correct alternative must be accepted: {how}; {why})"))
    return report


def cmd_check(args) -> int:
    from concurrent.futures import ThreadPoolExecutor

    chosen = [exercises.find(i, ROOT) for i in args.ids] if args.ids else exercises.discover(ROOT)
    if not chosen:
        raise UsageError("没有找到任何练习。", "no exercises found.")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(check_exercise, chosen))
    failed = sum(bool(r["problems"]) for r in results)
    warned = sum(bool(r["warnings"]) for r in results)
    if args.json:
        print(json.dumps([{"id": e.id, "name": e.name, **r} for e, r in zip(chosen, results)], ensure_ascii=False, indent=1))
        return 1 if failed else 0
    style = Style(sys.stdout)
    for exercise, result in zip(chosen, results):
        problems, skipped = result["problems"], result["skipped"]
        mark = style("FAIL", "31") if problems else style("skip", "33") if skipped else style("ok", "32")
        rejected = sum(w["status"] != "accepted" for w in result["wrong"])
        wrong = tr(f"  错误解法 {rejected}/{len(result['wrong'])} 被拒绝", f"  wrong solutions rejected {rejected}/{len(result['wrong'])}") \
            if result["wrong"] else ""
        if result["right"]:
            accepted = sum(r["status"] == "accepted" for r in result["right"])
            wrong += tr(f"，另一种正确写法 {accepted}/{len(result['right'])} 通过",
                        f", correct alternatives accepted {accepted}/{len(result['right'])}")
        print(f"{mark:<4} {exercise.name}  {skipped}{wrong}".rstrip())
        for problem in problems:
            print(f"       {problem}")
        for warning in result["warnings"]:
            print(style(f"       {tr('警告', 'warning')}: {warning}", "33"))
    print(tr(f"检查了 {len(chosen)} 个练习，{failed} 个有问题，{warned} 个有警告（警告暂不算失败）。",
             f"Checked {len(chosen)} exercises, {failed} with problems, {warned} with warnings (warnings do not fail the check yet)."))
    return 1 if failed else 0


# ----------------------------------------------------------------------------------------------
# Command line


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be a positive number / 必须是正数: {text!r}")
        return value
    return parse


def _parser(command: str) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lang", choices=("zh", "en"), default=os.environ.get("MINI_PLATFORM_LANG", "zh"),
                        help="output language / 输出语言 (default zh)")
    common.add_argument("--json", action="store_true", help="machine-readable output / 输出 JSON")
    parser = argparse.ArgumentParser(prog=f"python practice/judge.py {'' if command == 'judge' else command}".strip(),
                                     parents=[common], description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    if command == "judge":
        parser.add_argument("id", help="exercise id, e.g. 180 / 练习编号")
        parser.add_argument("file", nargs="?", help="file to judge (default: the workspace file) / 要评测的文件")
        parser.add_argument("--timeout", type=_positive(float), help="seconds (default: the exercise's limit) / 时间限制（秒）")
        parser.add_argument("--memory", type=_positive(int), help="address-space limit in MiB / 内存限制（MiB）")
    elif command in ("show", "reset", "hint"):
        parser.add_argument("id")
    elif command == "solution":
        parser.add_argument("id")
        parser.add_argument("--yes", action="store_true", help="show it even before acceptance / 未通过也显示")
    elif command == "engine":
        parser.add_argument("--parts", help="only these exercises may be yours, e.g. 194,213 / 只用这些练习的实现")
        parser.add_argument("--chapter", type=_positive(int),
                            help="only this chapter's parts and the runs that call them / 只跑这一章的部件")
        parser.add_argument("--timeout", type=_positive(float), help="seconds for the whole run / 整个运行的时间限制（秒）")
        parser.add_argument("--no-cache", action="store_true",
                            help="run every engine, read and store nothing (judging/engine_cache.py) / 不用缓存")
        parser.add_argument("--memory", type=_positive(int), help="address-space limit in MiB / 内存限制（MiB）")
    elif command == "check":
        parser.add_argument("ids", nargs="*")
        parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    return parser


DESCRIPTION = "练习的本地评测（隔离的子进程里运行测试）/ local judge of the exercises (tests run in an isolated child process)"
EPILOG = """commands / 命令:
  ID [FILE]      judge the workspace file (created from the starter) or FILE / 评测
  list           exercises and their last verdicts / 练习列表与上次结果
  show ID        print the statement / 显示题目
  hint ID        the next hint, one at a time / 下一个提示（逐个显示）
  solution ID    the reference solution, once accepted / 通过后查看参考答案
  doctor         what this machine can run / 本机能运行什么
  engine [--parts IDS | --chapter N]  the engine with your accepted parts, against transformers / 用你的实现跑引擎
  check [IDS]    maintainers: solutions and right/ pass, starters and wrong/ fail, examples exist / 维护者检查
  reset ID       restore the starter (the old file is backed up) / 恢复起始代码（旧文件会备份）"""
COMMANDS = {"list": cmd_list, "show": cmd_show, "hint": cmd_hint, "solution": cmd_solution, "doctor": cmd_doctor,
            "check": cmd_check, "reset": cmd_reset, "engine": cmd_engine}


def main(argv: list[str] | None = None) -> int:
    global LANG
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else "judge"
    args = _parser(command).parse_args(argv[1:] if command != "judge" else argv)
    LANG = args.lang
    try:
        return (COMMANDS.get(command) or cmd_judge)(args)
    except KeyboardInterrupt:   # Ctrl+C: run_isolated has already killed the child and its processes
        print(tr("\n已中断。", "\ninterrupted."), file=sys.stderr)
        return 130
    except BrokenPipeError:   # e.g. `judge.py list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except ExerciseError as exc:   # UsageError included: both languages, the chosen one first
        first, second = (exc.en, exc.zh) if LANG == "en" else (exc.zh, exc.en)
        print(Style(sys.stderr)(f"错误 / error: {first}", "31") + f"\n{second}", file=sys.stderr)
        return 2

