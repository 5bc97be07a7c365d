"""The isolated run of a judgement: one fresh child process per run, limited and cleaned up.

``run_isolated(exercise, file, timeout, memory_mb)`` runs ``judge_core.run_tests`` for ``file`` in a
child process (this module, run with ``python -m``; for a pure-Python exercise, forked from the judge with
pytest already imported, which saves a second interpreter start: see :class:`_ForkedChild`): its own session
and process group (everything it starts is killed when it ends, times out or the judge is interrupted: SIGTERM,
then SIGKILL after a short grace; on Linux also processes that left the group, found through the subreaper and
an environment marker or, for a forked child, their start time), an address-space limit, no core files, a
file-size limit, stdin on /dev/null, and its stdout/stderr read incrementally and cut off past a cap. The verdict is read only from a JSON file
the child writes after the run, stamped with a random token it received on a pipe before any
submitted code ran; an exit code never counts, so ``sys.exit(0)``, ``os._exit(0)``, a crash or an
endless loop cannot read as a pass, and an "accepted" that does not fit the test file (tests missing,
counts inconsistent) is refused. The learner's file is copied, never modified.

``run_batch(exercise, files, ...)`` judges several trusted files (an exercise's solution, starter and
wrong solutions, for ``judge.py check``) in one child, one after another, so that importing torch is
paid once; a file the batch could not report on (a crash, a time-out) is judged again on its own.
``run_jobs`` does the same for files of different exercises (``judge.py engine``), and ``run_child``
runs any module of this package under the same isolation (the engine run of engine_run.py).

Statuses: those of judge_core plus ``timeout`` (the time limit passed) and ``crashed`` (the process
died or exited before reporting: a signal such as SIGSEGV, or an exit). The verdict gains: exit_code
(the child's), wall_time, timeout, memory_limit_mb, process_output / process_stderr (what the child
wrote to its real stdout/stderr, capped, the child's temporary paths removed: a faulthandler report
after a crash or a timeout). For timeout and crashed, ``details`` names the submission's frames where
it was ("submission.py:12 in f"), ``running`` the test that had started last (the child reports each
test as it starts) and ``triton_interpreter`` whether Triton kernels ran in its interpreter (where an
out-of-bounds load or store corrupts memory instead of faulting, see render.py).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .exercises import PRACTICE_DIR, Exercise, ExerciseError
from .render import MESSAGES

MEMORY_MB = {"pure": 1024, "torch": 3072}   # address space: torch + triton import needs ~0.9 GiB
PIPE_LIMIT = 4 << 20        # bytes the child may write to its real stdout/stderr before it is killed
KEEP = 16 << 10             # bytes of that kept to show (head of stdout, tail of stderr)
GRACE = 0.5                 # seconds between SIGTERM and SIGKILL
PROGRESS = "@@mini-judge-progress "   # a child's stderr line that says how far it got (progress)
SCHEMA = 2                  # judge_core.SCHEMA_VERSION (not imported here: judge_core imports pytest)
# Processes the submission detaches from the child's process group (a double fork, setsid) escape
# killpg; on Linux this process becomes their "subreaper", so they re-parent to it instead of init,
# and each judgement's descendants carry RUN_MARKER=<its id> in their environment to be found by.
RUN_MARKER = "MINI_PLATFORM_JUDGE_RUN"


class UnsupportedPlatform(ExerciseError):
    """The isolated run needs POSIX process groups and resource limits."""


def _tr(lang: str, zh: str, en: str) -> str:
    return en if lang == "en" else zh


# ----------------------------------------------------------------------------------------------
# The child process


def child_prologue(memory_mb: int) -> str:
    """The first thing an isolated child does, before any submitted code runs: limit itself, read
    the token from stdin, put stdin on /dev/null, make a segfault or the judge's SIGTERM print where
    it was. Returns the token that stamps the result file."""
    import faulthandler

    _set_limits(memory_mb)
    token = sys.stdin.readline().strip()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdin = open(os.devnull, encoding="utf-8")
    faulthandler.enable()                      # a segfault prints where it happened
    faulthandler.register(signal.SIGTERM, chain=True)   # so does the judge's timeout, then it dies
    return token


def progress(text: str) -> None:
    """In a child: say how far it got, as one line on its stderr that :func:`run_child` hands to its
    ``on_progress`` (and keeps out of the stderr it returns)."""
    os.write(2, (PROGRESS + text.replace("\n", " ") + "\n").encode("utf-8", "replace"))


def write_result(result_file: str, token: str, verdicts: list[dict]) -> None:
    """Write the child's results so far, stamped with ``token``, atomically (read by read_result)."""
    data = json.dumps({"token": token, "verdicts": verdicts}, ensure_ascii=False)
    with open(result_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(result_file + ".tmp", result_file)


def child_main(result_file: str, memory_mb: str, jobs: str, rewrite_cache: str = "") -> None:
    """Runs in the isolated child: judge each ``[test_file, submission_file]`` pair of the JSON list
    ``jobs`` in turn, writing the verdicts so far after each (the test files' rewritten assertions kept in
    the folder ``rewrite_cache``)."""
    token = child_prologue(int(memory_mb))
    sys.argv = ["submission.py"]
    from . import judge_core

    verdicts = []
    for test_file, submission_file in json.loads(jobs):
        started = time.monotonic()
        try:
            verdict = judge_core.run_tests(test_file, submission_file, os.path.join(os.getcwd(), "work"),
                                           rewrite_cache or None, on_test_start=lambda name: progress("test " + name))
        except BaseException as exc:  # noqa: BLE001 - report anything, never a pass
            verdict = bare_verdict("memory_limit" if isinstance(exc, MemoryError) else "error",
                                   f"judge_core failed: {type(exc).__name__}: {exc}")
        verdict["child_seconds"] = round(time.monotonic() - started, 3)
        verdicts.append(verdict)
        write_result(result_file, token, verdicts)
    os._exit(0)   # leftover non-daemon threads must not keep the process alive


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


# ----------------------------------------------------------------------------------------------
# Running judgements


def cache_folder(kind: str) -> Path:
    """Where the judge keeps what it computed by content (kind: "tests", "engine"):
    ``$MINI_PLATFORM_JUDGE_CACHE/kind``, else ``$XDG_CACHE_HOME/mini-platform/judge/kind`` (``~/.cache/...``)."""
    chosen = os.environ.get("MINI_PLATFORM_JUDGE_CACHE")
    if chosen:
        return Path(chosen) / kind
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mini-platform" / "judge" / kind


def memory_limit_mb(exercise: Exercise) -> int:
    return MEMORY_MB["torch"] if exercise.requires else MEMORY_MB["pure"]


def child_env(exercises: list[Exercise] = ()) -> dict:
    """The environment of an isolated child (judging ``exercises``)."""
    env = dict(os.environ)
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8")
    env.pop("PYTHONSTARTUP", None)
    if any("triton" in e.requires for e in exercises) and not Path("/dev/nvidia0").exists():
        env.setdefault("TRITON_INTERPRET", "1")   # no GPU: Triton kernels run in its interpreter
    return env


class _ForkedChild:
    """A child forked from the judge that calls ``entry(*args)`` with what ``python -m module *args`` would
    have: its own session, stdin/stdout/stderr on pipes, the working folder ``cwd`` and the environment
    ``env`` (as os.environ), bytecode writing off, ``module`` as ``__main__`` (for multiprocessing's spawn).
    It skips starting a second interpreter and importing pytest again (with this and a leaner failure report,
    judging exercise 180 went from 0.53 s to 0.37 s, medians of ``benchmarks/judge_speed.py`` on the course's 2-core
    Xeon development machine). Only the part of :class:`subprocess.Popen` that :func:`run_child` uses."""

    @staticmethod
    def safe() -> bool:
        """Forking without exec is safe only from a single-threaded process that has not loaded a library with
        thread pools of its own (torch, numba: their threads and fork handlers do not survive a fork), and os.fork
        exists on POSIX only. The command-line judge of a pure-Python exercise is such a process."""
        import threading

        return hasattr(os, "fork") and threading.active_count() == 1 and not {"torch", "numba"} & sys.modules.keys()

    def __init__(self, entry: Callable[..., None], args: list[str], module: str, cwd: str, env: dict) -> None:
        pipes = [os.pipe() for _ in range(3)]   # stdin, stdout, stderr: (read end, write end)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()   # else what this process buffered would be written twice
        pid = os.fork()
        if pid == 0:   # the child: never returns into the judge's code
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)   # as a new interpreter has them
                signal.signal(signal.SIGINT, signal.default_int_handler)
                os.setsid()
                os.chdir(cwd)
                for fd, (read, write) in enumerate(pipes):
                    os.dup2(read if fd == 0 else write, fd)
                for read, write in pipes:
                    os.close(read)
                    os.close(write)
                os.environ.clear()
                os.environ.update(env)
                sys.stdin = open(0, encoding="utf-8", closefd=False)
                sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
                sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
                sys.dont_write_bytecode = True
                sys.modules["__main__"] = sys.modules[module]
                sys.argv = [sys.modules[module].__file__, *args]
                entry(*args)
            except BaseException:  # noqa: BLE001 - report it like a child interpreter would, then exit
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
            os._exit(1)
        self.pid, self.returncode, self.started = pid, None, _start_ticks(pid)
        for fd, (read, write) in enumerate(pipes):
            os.close(read if fd == 0 else write)
        self.stdin = open(pipes[0][1], "wb", buffering=0)
        self.stdout = open(pipes[1][0], "rb", buffering=0)
        self.stderr = open(pipes[2][0], "rb", buffering=0)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.005)
        return self.returncode


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _where(stderr: str) -> str:
    """The submission/test frames of a faulthandler dump ('submission.py:12 in f'), innermost first."""
    frames = re.findall(r'File "[^"]*?(submission|test)\.py", line (\d+) in (\S+)', stderr)
    return "\n".join(f"{name}.py:{line} in {func}" for name, line, func in frames[:8])


def _progress_lines(pending: bytearray, err: bytearray, on_progress: Callable[[str], None]) -> None:
    """Move the complete lines of ``pending`` (stderr as it arrives) to ``err``, except progress lines,
    which go to ``on_progress``."""
    *lines, rest = pending.split(b"\n")
    for line in lines:
        if line.startswith(PROGRESS.encode()):
            on_progress(line[len(PROGRESS):].decode("utf-8", "replace"))
        else:
            err.extend(line + b"\n")
    pending[:] = rest


def run_child(module: str, args: list[str], env: dict, budget: float, memory_mb: int,
              on_progress: Callable[[str], None] = lambda text: None,
              entry: Callable[..., None] | None = None) -> dict:
    """Run ``python -m module RESULT_FILE MEMORY_MB *args`` isolated (see the module docstring; practice/ is
    put on the child's PYTHONPATH so that this package imports) for at most ``budget`` seconds; the
    module's main starts with :func:`child_prologue` and reports with :func:`write_result`
    (and may report how far it got with :func:`progress`, passed on to ``on_progress``).
    Given ``entry`` (the module's main function), the child is forked from this process and calls it
    instead of starting a new interpreter, when that is safe (see :class:`_ForkedChild`).
    Returns what came back: the results written in time, why it stopped, its exit code and its output."""
    if os.name == "nt":
        raise UnsupportedPlatform("本地评测需要 Linux 或 macOS（Windows 上请用 WSL），纯 Python 的练习也可以在网页里做。",
                                  "the local judge needs Linux or macOS (on Windows use WSL); "
                                  "pure-Python exercises also run on the site.")
    _adopt_orphans()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mini-judge-") as tmp:
        token, run_id = secrets.token_hex(16), secrets.token_hex(8)
        result_file = os.path.join(tmp, "result.json")
        cmd = [sys.executable, "-m", module, result_file, str(memory_mb), *args]
        path = os.pathsep.join(p for p in (str(PRACTICE_DIR), env.get("PYTHONPATH")) if p)
        env = {**env, RUN_MARKER: run_id, "PYTHONPATH": path}
        if entry is not None and _ForkedChild.safe():
            proc = _ForkedChild(entry, cmd[3:], module, tmp, env)
        else:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=tmp, env=env, start_new_session=True)
        out, err, pending, total, reason, reported_in_time = bytearray(), bytearray(), bytearray(), 0, None, False
        selector = selectors.DefaultSelector()
        try:
            try:
                proc.stdin.write((token + "\n").encode())
                proc.stdin.close()
            except BrokenPipeError:   # the child died at once; reported below as crashed
                pass
            selector.register(proc.stdout, selectors.EVENT_READ, out)
            selector.register(proc.stderr, selectors.EVENT_READ, pending)
            deadline = started + budget
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
                        _progress_lines(pending, err, on_progress)
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
            _kill_strays(run_id, getattr(proc, "started", None))   # and what left the group (setsid, daemons)
        for key in list(selector.get_map().values()):   # what is left in the pipes, without blocking
            os.set_blocking(key.fd, False)
            try:
                key.data.extend(os.read(key.fd, KEEP))
            except BlockingIOError:
                pass
        _progress_lines(pending, err, on_progress)
        err.extend(pending)
        del err[:-KEEP]
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        # A result written in time counts even if the deadline passed while the child was exiting;
        # one written later (a child that ignored SIGTERM and finished in the grace period) does not.
        verdicts = read_result(result_file, token) if reason is None or reported_in_time else None

    def shown(data: bytearray) -> str:   # the child's temporary folders are nobody's business
        text = data.decode("utf-8", "replace")
        for folder in {tmp, os.path.realpath(tmp)}:
            text = re.sub(re.escape(folder) + r"/(work/run-[^/\s]+/)?", "", text)
        return text
    return {"verdicts": verdicts or [], "reason": reason, "returncode": proc.returncode,
            "elapsed": time.monotonic() - started, "stdout": shown(out[:KEEP]), "stderr": shown(err[-KEEP:])}


def _finish(verdict: dict | None, run: dict, exercise: Exercise, timeout: float, memory_mb: int,
            lang: str, wall_time: float) -> dict:
    """The verdict as the judge reports it: checked against the test file, with the process's facts."""
    stderr = run["stderr"]
    if verdict is None:
        verdict = _process_verdict(run["reason"], run["returncode"], stderr, timeout, lang)
        verdict.update(running=run.get("running", ""), triton_interpreter=bool(run.get("triton_interpreter")))
    elif why := _implausible(verdict, exercise):
        verdict = bare_verdict("error", _tr(lang, f"子进程报告的结果与测试文件对不上（{why}），不算数：提交的代码改动了评测程序吗？",
                                            f"the verdict the child reported does not fit the test file ({why}); "
                                            "it does not count: did the submission tamper with the judge?"))
    verdict.pop("child_seconds", None)
    verdict.update(exit_code=run["returncode"], wall_time=round(wall_time, 3), timeout=timeout,
                   memory_limit_mb=memory_mb, process_output=run["stdout"],
                   process_stderr=stderr if verdict["status"] != "accepted" else "")
    return verdict


def _judge_child(jobs: list[tuple[Exercise, Path]], timeout: float, memory_mb: int) -> dict:
    pairs = [[str(exercise.file("test.py")), str(Path(file).resolve())] for exercise, file in jobs]
    last = {"test": ""}   # the test that started last ("test NAME" progress lines, one as each test starts)
    env = child_env([e for e, _ in jobs])
    entry = None
    if all(exercise.pure_python for exercise, _ in jobs):   # pure Python: fork, with pytest imported here once
        from . import judge_core  # noqa: F401 - imported for the forked child

        entry = child_main
    run = run_child(__name__, [json.dumps(pairs), str(cache_folder("tests"))], env, timeout * len(jobs), memory_mb,
                    lambda line: last.update(test=line[len("test "):]), entry)
    run.update(running=last["test"], triton_interpreter=env.get("TRITON_INTERPRET") == "1"
               and any("triton" in exercise.requires for exercise, _ in jobs))
    return run


def run_isolated(exercise: Exercise, file: Path, timeout: float, memory_mb: int, lang: str = "zh") -> dict:
    """Judge ``file`` against ``exercise`` in an isolated child process; return the verdict dict."""
    run = _judge_child([(exercise, Path(file))], timeout, memory_mb)
    verdict = run["verdicts"][0] if run["verdicts"] else None
    return _finish(verdict, run, exercise, timeout, memory_mb, lang, run["elapsed"])


def run_batch(exercise: Exercise, files: list[Path], timeout: float, memory_mb: int, lang: str = "zh") -> list[dict]:
    """Judge several trusted files of one exercise in one child (see :func:`run_jobs`)."""
    return run_jobs([(exercise, Path(f)) for f in files], timeout, memory_mb, lang)


def run_jobs(jobs: list[tuple[Exercise, Path]], timeout: float, memory_mb: int, lang: str = "zh") -> list[dict]:
    """Judge several (exercise, file) pairs in one child, one after another, so that importing torch is
    paid once; each gets ``timeout`` seconds. A pair the batch did not report on, or that took longer
    than ``timeout`` in it, is judged alone. The files share one process: use it for files whose
    verdicts cannot be turned by an earlier file's side effects, or where nothing but their owner's
    own result depends on them (judge.py check, judge.py engine)."""
    if not jobs:
        return []
    run = _judge_child(jobs, timeout, memory_mb)
    results = []
    for i, (exercise, file) in enumerate(jobs):
        verdict = run["verdicts"][i] if i < len(run["verdicts"]) else None
        if verdict is None or verdict.get("child_seconds", 0) > timeout or verdict.get("status") == "output_limit":
            results.append(run_isolated(exercise, file, timeout, memory_mb, lang))
        else:
            results.append(_finish(verdict, {**run, "stderr": "", "stdout": ""}, exercise, timeout, memory_mb,
                                   lang, verdict["child_seconds"]))
    return results


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
    missing = set(exercise.test_functions(cache_folder("tests"))) - {str(t.get("name", "")).split("[")[0] for t in tests}
    names = sorted(missing)
    return f"tests never reported: {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}" if names else ""


def _adopt_orphans() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            pass


def _stat_fields(stat: Path) -> list[str]:
    """The fields of /proc/PID/stat after the command name (field 3, the state, is the first)."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux /proc; None elsewhere)."""
    try:
        return int(_stat_fields(Path(f"/proc/{pid}/stat"))[19])
    except (OSError, ValueError, IndexError):
        return None


def _kill_strays(run_id: str, since: int | None = None) -> None:
    """SIGKILL and reap this process's children that belong to judgement ``run_id`` (Linux /proc): those
    carrying its marker in their environment, or, given ``since`` (when a forked child started, whose
    descendants that never exec'd have this process's environment), every child that started since then.
    A forked child is forked from a single-threaded judge that starts nothing else while it runs, so only
    its own descendants (orphans re-parent to this subreaper) can be children started after it."""
    marker = f"{RUN_MARKER}={run_id}".encode()
    for _ in range(20):   # a stray may fork while it is being killed
        strays = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = _stat_fields(stat)
                if int(fields[1]) != os.getpid():
                    continue
                if (since is not None and int(fields[19]) >= since) \
                        or marker in (stat.parent / "environ").read_bytes().split(b"\0"):
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


def read_result(path: str, token: str) -> list[dict] | None:
    """The verdicts in the child's result file, or None when it is missing, unreadable or not stamped
    with ``token``."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(64 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("token") != token or not isinstance(data.get("verdicts"), list) \
            or not all(isinstance(v, dict) for v in data["verdicts"]):
        return None
    return data["verdicts"]


def _process_verdict(reason: str | None, returncode: int, stderr: str, timeout: float, lang: str) -> dict:
    """The verdict when the child did not report one."""
    where = _where(stderr)
    if reason == "timeout":
        status = "timeout"
        message = _tr(lang, *MESSAGES["timeout"]).format(timeout=timeout)
    elif reason == "output_limit":
        status = "output_limit"
        message = _tr(lang, f"进程直接写出了超过 {PIPE_LIMIT >> 20} MiB 的输出，已被终止。",
                      f"the process wrote more than {PIPE_LIMIT >> 20} MiB of output and was killed.")
    elif returncode == -signal.SIGXFSZ:
        status, message = "output_limit", _tr(lang, "写入的文件超过大小限制。", "a file written exceeded the size limit.")
    elif "MemoryError" in stderr or "std::bad_alloc" in stderr:
        status, message = "memory_limit", _tr(lang, "内存不足（超出内存限制）。", "out of memory (memory limit exceeded).")
    elif returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        status = "crashed"
        message = _tr(lang, f"进程被信号 {name} 终止（例如段错误），没有报告结果。",
                      f"the process was killed by {name} (e.g. a segmentation fault) before reporting.")
    else:
        status = "crashed"
        message = _tr(lang, f"进程在测试结束前退出了（退出码 {returncode}）：代码里调用了 sys.exit()/os._exit() 吗？",
                      f"the process exited (code {returncode}) before the tests finished: does the code call "
                      "sys.exit() or os._exit()?")
    return bare_verdict(status, message, where)


def bare_verdict(status: str, message: str, details: str = "") -> dict:
    """A verdict in judge_core's schema for a run that produced no per-test results."""
    return {"schema": SCHEMA, "status": status, "message": message, "details": details, "tests": [],
            "counts": {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "total": 0},
            "output": "", "output_truncated": status == "output_limit", "duration": 0.0}


if __name__ == "__main__":
    child_main(*sys.argv[1:])
