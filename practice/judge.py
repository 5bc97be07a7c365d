"""The local judge of the course exercises: ``python practice/judge.py 180``.

    python practice/judge.py 180 [FILE]    judge the workspace file (created from the starter) or FILE
    python practice/judge.py list | show ID | doctor | check [IDS] | reset ID

Each judgement runs ``judge_core.run_tests`` in a fresh child process: its own session and process
group (everything it starts is killed when it ends, times out or the judge is interrupted: SIGTERM,
then SIGKILL after a short grace; on Linux also processes that left the group, found through the
subreaper and an environment marker), an address-space limit, no core files, a file-size limit, stdin on /dev/null, and its
stdout/stderr read incrementally and cut off past a cap. The verdict is read only from a JSON file
the child writes after the run, stamped with a random token it received on a pipe before any
submitted code ran; an exit code never counts, so ``sys.exit(0)``, ``os._exit(0)``, a crash or an
endless loop cannot read as a pass, and an "accepted" that does not fit the test file (tests missing,
counts inconsistent) is refused. The learner's file is copied, never modified.

Statuses: those of judge_core (accepted, wrong_answer, error, syntax_error, import_error,
memory_limit, output_limit, no_tests, interrupted) plus ``timeout`` (the time limit passed) and
``crashed`` (the process died or exited before reporting: a signal such as SIGSEGV, or an exit).
Exit status: 0 accepted, 1 any other verdict, 2 bad input (unknown id, missing file, bad exercise).

``--json`` prints judge_core's verdict schema plus: exercise (id), file, exit_code (the child's),
wall_time, timeout, memory_limit_mb, process_output / process_stderr (what the child wrote to its
real stdout/stderr, capped: a faulthandler report after a crash or a timeout). For timeout and
crashed, ``details`` names the submission's frames where it was ("submission.py:12 in f").
The last verdict of each exercise's workspace file is kept in practice/.judge_state.json (git-ignored);
judging another file records nothing.
Environment: NO_COLOR, MINI_PLATFORM_LANG (default language), MINI_PLATFORM_PRACTICE_DIR (another
folder of exercises, with its own workspace and state; used by the tests).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

PRACTICE_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(PRACTICE_DIR))
import exercises  # noqa: E402
from exercises import Exercise, ExerciseError  # noqa: E402

# Where exercises, the workspace and the state file live; tests point it at a temporary folder.
ROOT = Path(os.environ.get("MINI_PLATFORM_PRACTICE_DIR") or PRACTICE_DIR).resolve()
WORKSPACE = ROOT / "workspace"
STATE_FILE = ROOT / ".judge_state.json"
MEMORY_MB = {"pure": 1024, "torch": 3072}   # address space: torch + triton import needs ~0.9 GiB
PIPE_LIMIT = 4 << 20        # bytes the child may write to its real stdout/stderr before it is killed
KEEP = 16 << 10             # bytes of that kept to show (head of stdout, tail of stderr)
GRACE = 0.5                 # seconds between SIGTERM and SIGKILL
STATUS_ZH = {   # in English the status name itself is shown
    "accepted": "通过", "wrong_answer": "答案错误", "error": "运行出错", "syntax_error": "语法错误",
    "import_error": "导入失败", "memory_limit": "超出内存限制", "output_limit": "输出过多",
    "no_tests": "没有测试", "interrupted": "被中断", "timeout": "超时", "crashed": "进程崩溃",
}
HINTS = {   # shown under a verdict whose cause is not in a test's message
    "memory_limit": ("内存限制是 {memory} MiB（--memory 可以调整）。", "the memory limit is {memory} MiB (change it with --memory)."),
    "output_limit": ("打印的内容太多，超出部分已丢弃；请删掉调试用的大段输出。",
                     "too much was printed and the rest was dropped; remove large debug output."),
    "no_tests": ("测试文件里没有测试。", "the test file defines no tests."),
}
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


# ----------------------------------------------------------------------------------------------
# The child process


def child_main(test_file: str, submission_file: str, workdir: str, result_file: str, memory_mb: str) -> None:
    """Runs in the isolated child: limit itself, read the token, close stdin, run, write the result."""
    import faulthandler

    _set_limits(int(memory_mb))

    token = sys.stdin.readline().strip()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdin = open(os.devnull, encoding="utf-8")
    faulthandler.enable()                      # a segfault prints where it happened
    faulthandler.register(signal.SIGTERM, chain=True)   # so does the judge's timeout, then it dies
    sys.argv = ["submission.py"]
    import judge_core

    try:
        verdict = judge_core.run_tests(test_file, submission_file, workdir)
    except BaseException as exc:  # noqa: BLE001 - report anything, never a pass
        verdict = _bare_verdict("memory_limit" if isinstance(exc, MemoryError) else "error",
                                f"judge_core failed: {type(exc).__name__}: {exc}")
    data = json.dumps({"token": token, "verdict": verdict}, ensure_ascii=False)
    with open(result_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(result_file + ".tmp", result_file)
    os._exit(0)   # leftover non-daemon threads must not keep the process alive


# ----------------------------------------------------------------------------------------------
# Running one judgement


def memory_limit_mb(exercise: Exercise) -> int:
    return MEMORY_MB["torch"] if exercise.requires else MEMORY_MB["pure"]


def _set_limits(memory_mb: int) -> None:
    """Address space, no core files, bounded file size. Set by the child on itself (no preexec_fn,
    which is unsafe with threads); a limit the OS does not enforce (RLIMIT_AS on macOS) is skipped."""
    import resource

    for which, value in ((resource.RLIMIT_AS, memory_mb << 20), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_FSIZE, 256 << 20)):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def _child_env(exercise: Exercise) -> dict:
    env = dict(os.environ)
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8")
    env.pop("PYTHONSTARTUP", None)
    if "triton" in exercise.requires and not Path("/dev/nvidia0").exists():
        env.setdefault("TRITON_INTERPRET", "1")   # no GPU: Triton kernels run in its interpreter
    return env


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _where(stderr: str) -> str:
    """The submission/test frames of a faulthandler dump ('submission.py:12 in f'), innermost first."""
    frames = re.findall(r'File "[^"]*?(submission|test)\.py", line (\d+) in (\S+)', stderr)
    return "\n".join(f"{name}.py:{line} in {func}" for name, line, func in frames[:8])


def run_isolated(exercise: Exercise, file: Path, timeout: float, memory_mb: int) -> dict:
    """Judge ``file`` against ``exercise`` in an isolated child process; return the verdict dict."""
    import secrets

    if os.name == "nt":
        raise UsageError("本地评测需要 Linux 或 macOS（Windows 上请用 WSL），纯 Python 的练习也可以在网页里做。",
                         "the local judge needs Linux or macOS (on Windows use WSL); pure-Python exercises also run on the site.")
    _adopt_orphans()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mini-judge-") as tmp:
        token, run_id = secrets.token_hex(16), secrets.token_hex(8)
        result_file = os.path.join(tmp, "result.json")
        cmd = [sys.executable, str(Path(__file__).resolve()), "_child", str(exercise.file("test.py")),
               str(Path(file).resolve()), os.path.join(tmp, "work"), result_file, str(memory_mb)]
        env = {**_child_env(exercise), RUN_MARKER: run_id}
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=tmp, env=env, start_new_session=True)
        out, err, total, reason, reported_in_time = bytearray(), bytearray(), 0, None, False
        selector = selectors.DefaultSelector()
        try:
            try:
                proc.stdin.write((token + "\n").encode())
                proc.stdin.close()
            except BrokenPipeError:   # the child died at once; reported below as crashed
                pass
            selector.register(proc.stdout, selectors.EVENT_READ, out)
            selector.register(proc.stderr, selectors.EVENT_READ, err)
            deadline = started + timeout
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    reason = "timeout"
                    reported_in_time = os.path.exists(result_file)   # written (atomically), still exiting
                    break
                for key, _ in selector.select(timeout=0.02):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    total += len(chunk)
                    key.data.extend(chunk)
                    if key.data is out:
                        del out[KEEP:]
                    else:
                        del err[:-KEEP]
                if total > PIPE_LIMIT:
                    reason = "output_limit"
                    break
            if reason == "timeout":
                _kill_group(proc.pid, signal.SIGTERM)   # faulthandler prints where it was
                try:
                    proc.wait(GRACE)
                except subprocess.TimeoutExpired:
                    pass
        finally:   # also on Ctrl+C in the judge: nothing the submission started outlives it
            _kill_group(proc.pid, signal.SIGKILL)       # the child and everything it started
            proc.wait()
            _kill_strays(run_id)                        # and what left the group (setsid, daemons)
        for key in list(selector.get_map().values()):   # what is left in the pipes, without blocking
            os.set_blocking(key.fd, False)
            try:
                key.data.extend(os.read(key.fd, KEEP))
            except BlockingIOError:
                pass
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        # A result written in time counts even if the deadline passed while the child was exiting;
        # one written later (a child that ignored SIGTERM and finished in the grace period) does not.
        verdict = _read_result(result_file, token) if reason is None or reported_in_time else None
    elapsed = time.monotonic() - started
    stderr = err[-KEEP:].decode("utf-8", "replace")
    if verdict is None:
        verdict = _process_verdict(reason, proc.returncode, stderr, timeout)
    elif why := _implausible(verdict, exercise):
        verdict = _bare_verdict("error", tr(f"子进程报告的结果与测试文件对不上（{why}），不算数：提交的代码改动了评测程序吗？",
                                            f"the verdict the child reported does not fit the test file ({why}); "
                                            "it does not count: did the submission tamper with the judge?"))
    verdict.update(exit_code=proc.returncode, wall_time=round(elapsed, 3), timeout=timeout,
                   memory_limit_mb=memory_mb, process_output=out[:KEEP].decode("utf-8", "replace"),
                   process_stderr=stderr if verdict["status"] != "accepted" else "")
    return verdict


def _implausible(verdict: dict, exercise: Exercise) -> str:
    """Why a verdict read from the child cannot be what running the exercise's tests produced ("" if
    it can). The child runs the submission in-process, so a verdict forged there is caught only this far."""
    tests, counts = verdict.get("tests"), verdict.get("counts")
    if not isinstance(verdict.get("status"), str) or not isinstance(tests, list) or not isinstance(counts, dict) \
            or not all(isinstance(t, dict) for t in tests):
        return "malformed verdict"
    if verdict["status"] != "accepted":
        return ""
    outcomes = [t.get("outcome") for t in tests]
    if not outcomes.count("passed") or set(outcomes) - {"passed", "skipped"} or counts.get("total") != len(tests) \
            or counts.get("passed") != outcomes.count("passed"):
        return "the per-test outcomes and counts disagree"
    missing = set(exercise.test_functions()) - {str(t.get("name", "")).split("[")[0] for t in tests}
    names = sorted(missing)
    return f"tests never reported: {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}" if names else ""


# Processes the submission detaches from the child's process group (a double fork, setsid) escape
# killpg; on Linux this process becomes their "subreaper", so they re-parent to it instead of init,
# and each judgement's descendants carry RUN_MARKER=<its id> in their environment to be found by.
RUN_MARKER = "MINI_PLATFORM_JUDGE_RUN"


def _adopt_orphans() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            pass


def _kill_strays(run_id: str) -> None:
    """SIGKILL and reap this process's children that belong to judgement ``run_id`` (Linux /proc)."""
    marker = f"{RUN_MARKER}={run_id}".encode()
    for _ in range(20):   # a stray may fork while it is being killed
        strays = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid() and marker in (stat.parent / "environ").read_bytes().split(b"\0"):
                    strays.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                continue
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def _read_result(path: str, token: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(64 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("token") != token or not isinstance(data.get("verdict"), dict):
        return None
    return data["verdict"]


def _process_verdict(reason: str | None, returncode: int, stderr: str, timeout: float) -> dict:
    """The verdict when the child did not report one."""
    where = _where(stderr)
    if reason == "timeout":
        status = "timeout"
        message = tr(f"超过时间限制 {timeout:g} 秒，进程已被终止。", f"ran longer than the {timeout:g} s limit and was killed.")
    elif reason == "output_limit":
        status = "output_limit"
        message = tr(f"进程直接写出了超过 {PIPE_LIMIT >> 20} MiB 的输出，已被终止。",
                     f"the process wrote more than {PIPE_LIMIT >> 20} MiB of output and was killed.")
    elif returncode == -signal.SIGXFSZ:
        status, message = "output_limit", tr("写入的文件超过大小限制。", "a file written exceeded the size limit.")
    elif "MemoryError" in stderr or "std::bad_alloc" in stderr:
        status, message = "memory_limit", tr("内存不足（超出内存限制）。", "out of memory (memory limit exceeded).")
    elif returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        status = "crashed"
        message = tr(f"进程被信号 {name} 终止（例如段错误），没有报告结果。",
                     f"the process was killed by {name} (e.g. a segmentation fault) before reporting.")
    else:
        status = "crashed"
        message = tr(f"进程在测试结束前退出了（退出码 {returncode}）：代码里调用了 sys.exit()/os._exit() 吗？",
                     f"the process exited (code {returncode}) before the tests finished: does the code call "
                     "sys.exit() or os._exit()?")
    return _bare_verdict(status, message, where)


def _bare_verdict(status: str, message: str, details: str = "") -> dict:
    """A verdict in judge_core's schema (SCHEMA_VERSION 1; not imported here, it imports pytest)
    for a run that produced no per-test results."""
    return {"schema": 1, "status": status, "message": message, "details": details, "tests": [],
            "counts": {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "total": 0},
            "output": "", "output_truncated": status == "output_limit", "duration": 0.0}


# ----------------------------------------------------------------------------------------------
# Workspace and state


def workspace_file(exercise: Exercise) -> Path:
    return WORKSPACE / f"{exercise.name}.py"


def ensure_workspace(exercise: Exercise) -> bool:
    """Create the workspace file from the starter if it does not exist; True when created."""
    target = workspace_file(exercise)
    if target.exists():
        return False
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "x", encoding="utf-8") as f:   # "x": never overwrite
            f.write(exercise.file("starter.py").read_text(encoding="utf-8"))
    except FileExistsError:
        return False
    return True


def load_state() -> dict:
    try:
        data = json.loads(STATE_FILE.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_verdict(exercise: Exercise, verdict: dict, file: Path) -> None:
    state = load_state()
    state[str(exercise.id)] = {"status": verdict["status"], "passed": verdict["counts"]["passed"],
                               "total": verdict["counts"]["total"], "file": str(file),
                               "at": datetime.now().isoformat(timespec="seconds")}
    tmp = STATE_FILE.with_name(f"{STATE_FILE.name}.{os.getpid()}.tmp")   # two judges at once must not collide
    tmp.write_text(json.dumps(state, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, STATE_FILE)


# ----------------------------------------------------------------------------------------------
# Printing


def status_text(status: str) -> str:
    return f"{STATUS_ZH.get(status, status)} ({status})" if LANG == "zh" else status


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.rstrip().splitlines())


DETAILED = 3   # failing tests shown with traceback and output; the rest get one line each


def print_verdict(exercise: Exercise, file: Path, verdict: dict, style: Style) -> None:
    print(style(f"[{exercise.id}] {tr(exercise.title, exercise.title_en)}", "1") + f"  ({_display(file)})")
    marks = {"passed": style("✓", "32"), "failed": style("✗", "31"), "error": style("!", "31"),
             "skipped": style("-", "33")}
    shown = 0
    for test in verdict.get("tests", []):
        slow = f"  {test['duration']:.2f}s" if test["duration"] >= 0.1 else ""
        bad = test["outcome"] in ("failed", "error")
        first_line = test["message"].strip().splitlines()[0] if test["message"].strip() else ""
        print(f"  {marks.get(test['outcome'], '?')} {test['name']}{slow}"
              + (style(f"  {first_line}", "31") if bad and shown >= DETAILED else ""))
        if bad and shown < DETAILED:
            shown += 1
            print(style(_indent(test["message"]), "31"))
            if test["details"]:
                print(_indent(test["details"]))
            if test["stdout"].strip():
                print(_indent(tr("打印输出：", "printed:")) + "\n" + _indent(test["stdout"][-2000:], "        "))
    if verdict.get("message"):
        print(style(_indent(verdict["message"], "  "), "31"))
    if verdict.get("details"):
        print(_indent(verdict["details"], "    "))
    if verdict.get("output", "").strip() and verdict["status"] != "accepted":
        print(_indent(tr("测试之外的打印输出：", "printed outside the tests:"), "  ") + "\n"
              + _indent(verdict["output"][-2000:], "    "))
    stderr = _learner_lines(verdict.get("process_stderr", ""))
    if verdict["status"] in ("crashed", "memory_limit", "timeout") and stderr.strip():
        print(_indent(tr("进程的错误输出（末尾）：", "process stderr (tail):"), "  ") + "\n" + _indent(stderr[-1500:], "    "))
    if verdict["status"] in HINTS:
        print(_indent(tr(*HINTS[verdict["status"]]).format(memory=verdict.get("memory_limit_mb")), "  "))
    counts, seconds = verdict["counts"], verdict.get("wall_time", 0)
    summary = tr(f"{counts['passed']}/{counts['total']} 个测试通过，用时 {seconds:.2f} 秒",
                 f"{counts['passed']}/{counts['total']} tests passed in {seconds:.2f} s")
    colour = "1;32" if verdict["status"] == "accepted" else "1;31"
    print(style(tr("结果：", "Result: ") + status_text(verdict["status"]), colour) + "  " + summary)


def _learner_lines(stderr: str) -> str:
    """A crash report without the judge's and pytest's own frames."""
    noise = re.compile(r'^\s*File "[^"]*(site-packages|judge_core\.py|judge\.py|<frozen )')
    return "\n".join(line for line in stderr.splitlines() if not noise.match(line))


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


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
        file = workspace_file(exercise)
        if ensure_workspace(exercise) and not args.json:
            print(exercise.statement(LANG))
            print(tr(f"已从起始代码创建 {_display(file)}：在这个文件里写你的答案，然后再运行这条命令。\n",
                     f"Created {_display(file)} from the starter: write your answer there, then run this command again.\n"))
    timeout = args.timeout if args.timeout is not None else exercise.timeout
    verdict = run_isolated(exercise, file, timeout, args.memory or memory_limit_mb(exercise))
    verdict.update(exercise=exercise.id, file=str(file))
    if file.resolve() == workspace_file(exercise).resolve():   # progress is the workspace's verdict only
        save_verdict(exercise, verdict, file)
    if args.json:
        print(json.dumps(verdict, ensure_ascii=False, indent=1))
    else:
        print_verdict(exercise, file, verdict, Style(sys.stdout))
        if verdict["status"] != "accepted" and not args.file:
            print(tr(f"修改 {_display(file)} 后重新运行：python practice/judge.py {exercise.id}",
                     f"Edit {_display(file)} and run again: python practice/judge.py {exercise.id}"))
    return 0 if verdict["status"] == "accepted" else 1


def _missing_requirements(exercise: Exercise) -> list[str]:
    import importlib.util

    return [name for name in exercise.requires if importlib.util.find_spec(name) is None]


def _require_runnable(exercise: Exercise) -> None:
    missing = _missing_requirements(exercise)
    if missing:
        raise UsageError(f"练习 {exercise.id} 需要 {', '.join(missing)}，这台机器上没有安装。"
                         "安装：pip install -r requirements.txt（torch_npu 见 requirements-ascend.txt）。",
                         f"exercise {exercise.id} needs {', '.join(missing)}, which is not installed here. "
                         "Install: pip install -r requirements.txt (torch_npu: requirements-ascend.txt).")


def cmd_list(args) -> int:
    state = load_state()
    rows = []
    for path in exercises.exercise_dirs(ROOT):
        try:
            exercise = exercises.load_exercise(path)
        except ExerciseError as exc:
            rows.append({"id": int(path.name[:3]), "name": path.name, "error": tr(exc.zh, exc.en)})
            continue
        last = state.get(str(exercise.id), {})
        rows.append({"id": exercise.id, "name": exercise.name, "title": tr(exercise.title, exercise.title_en),
                     "chapter": exercise.chapter, "difficulty": exercise.difficulty,
                     "requires": list(exercise.requires), "last": last or None})
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    style = Style(sys.stdout)
    for row in rows:
        if "error" in row:
            print(style(f"{row['id']}  {row['name']}  {tr('练习格式有误：', 'broken exercise: ')}{row['error']}", "31"))
            continue
        last = row["last"]
        verdict = (style(status_text(last["status"]), "32" if last["status"] == "accepted" else "31")
                   + f" {last['passed']}/{last['total']}  {last['at']}") if last else tr("未评测", "not judged")
        needs = ",".join(row["requires"]) or tr("纯 Python", "pure Python")
        print(f"{row['id']}  {tr('第', 'ch ')}{row['chapter']}{tr('章', '')}  {row['difficulty']:<6}  "
              f"{needs:<14} {row['title']}\n       {verdict}")
    if not rows:
        print(tr("还没有练习。", "No exercises yet."))
    return 0


def cmd_show(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    print(f"[{exercise.id}] {tr(exercise.title, exercise.title_en)}  "
          f"({tr('第', 'chapter ')}{exercise.chapter}{tr('章', '')}, {exercise.difficulty}, "
          f"{','.join(exercise.requires) or tr('纯 Python', 'pure Python')}, {exercise.timeout}s)\n")
    print(exercise.statement(LANG))
    print(tr(f"评测：python practice/judge.py {exercise.id}   （答案写在 {_display(workspace_file(exercise))}）",
             f"Judge: python practice/judge.py {exercise.id}   (write your answer in {_display(workspace_file(exercise))})"))
    return 0


def cmd_reset(args) -> int:
    exercise = exercises.find(args.id, ROOT)
    target = workspace_file(exercise)
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
    import importlib.util
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


def check_exercise(exercise: Exercise) -> tuple[list[str], str]:
    """Maintainer checks for one exercise: (problems found, reason it was skipped or "")."""
    problems = exercises.validate_layout(exercise)
    missing = _missing_requirements(exercise)
    if missing:
        return problems, tr(f"跳过：需要 {', '.join(missing)}", f"skipped: needs {', '.join(missing)}")
    memory = memory_limit_mb(exercise)
    solution = run_isolated(exercise, exercise.file("solution.py"), exercise.timeout, memory)
    if solution["status"] != "accepted":
        first = next((t for t in solution["tests"] if t["outcome"] != "passed"), None)
        why = (first["name"] + ": " + first["message"] if first else solution["message"]).strip()[:300]
        problems.append(tr(f"solution.py 没有通过：{solution['status']}（{why}）",
                           f"solution.py is not accepted: {solution['status']} ({why})"))
    starter = run_isolated(exercise, exercise.file("starter.py"), exercise.timeout, memory)
    if starter["status"] == "accepted":
        problems.append(tr("starter.py 通过了测试（它必须失败）", "starter.py passes the tests (it must fail them)"))
    elif starter["status"] not in ("wrong_answer", "error") or not starter["counts"]["total"]:
        problems.append(tr(f"starter.py 必须能正常导入并让测试失败，实际是 {starter['status']}：{starter['message'][:300]}",
                           f"starter.py must import cleanly and fail the tests, got {starter['status']}: "
                           f"{starter['message'][:300]}"))
    return problems, ""


def cmd_check(args) -> int:
    from concurrent.futures import ThreadPoolExecutor

    chosen = [exercises.find(i, ROOT) for i in args.ids] if args.ids else exercises.discover(ROOT)
    if not chosen:
        raise UsageError("没有找到任何练习。", "no exercises found.")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(check_exercise, chosen))
    failed = sum(bool(problems) for problems, _ in results)
    if args.json:
        print(json.dumps([{"id": e.id, "name": e.name, "problems": p, "skipped": s}
                          for e, (p, s) in zip(chosen, results)], ensure_ascii=False, indent=1))
        return 1 if failed else 0
    style = Style(sys.stdout)
    for exercise, (problems, skipped) in zip(chosen, results):
        mark = style("FAIL", "31") if problems else style("skip", "33") if skipped else style("ok", "32")
        print(f"{mark:<4} {exercise.name}  {skipped}".rstrip())
        for problem in problems:
            print(f"       {problem}")
    print(tr(f"检查了 {len(chosen)} 个练习，{failed} 个有问题。", f"Checked {len(chosen)} exercises, {failed} with problems."))
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
    elif command in ("show", "reset"):
        parser.add_argument("id")
    elif command == "check":
        parser.add_argument("ids", nargs="*")
        parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    return parser


DESCRIPTION = "练习的本地评测（隔离的子进程里运行测试）/ local judge of the exercises (tests run in an isolated child process)"
EPILOG = """commands / 命令:
  ID [FILE]      judge the workspace file (created from the starter) or FILE / 评测
  list           exercises and their last verdicts / 练习列表与上次结果
  show ID        print the statement / 显示题目
  doctor         what this machine can run / 本机能运行什么
  check [IDS]    maintainers: solutions pass, starters fail, examples exist / 维护者检查
  reset ID       restore the starter (the old file is backed up) / 恢复起始代码（旧文件会备份）"""
COMMANDS = {"list": cmd_list, "show": cmd_show, "doctor": cmd_doctor, "check": cmd_check, "reset": cmd_reset}


def main(argv: list[str] | None = None) -> int:
    global LANG
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        child_main(*argv[1:])
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


if __name__ == "__main__":
    sys.exit(main())
