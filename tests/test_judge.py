"""The isolated judge (practice/judge.py): hostile submissions, the command line, the workspace.

Every judgement here goes through the judge's real path (``run_isolated`` or the command line),
on a throwaway exercise written into a temporary folder. Timeouts are short (2-3 s) to stay fast.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRACTICE = ROOT / "practice"
if str(PRACTICE) not in sys.path:
    sys.path.insert(0, str(PRACTICE))

from judging import exercises  # noqa: E402
import judge  # noqa: E402
from judging import sandbox  # noqa: E402

# ---------------------------------------------------------------------------------------------
# A throwaway exercise (also used by tests/test_judge_core.py and tests/test_exercises.py)

PROBLEM = """---
id: {id}
title: 加倍
title_en: "Double it"   # a comment
chapter: 1
difficulty: easy
requires: []
timeout: {timeout}
---

实现 `double(x)`，返回 `2 * x`。

## English

Implement `double(x)` returning `2 * x`.

## 示例 / Example

```python
double(2)   # 4
```
"""

TEST = """\
from submission import double


def test_example():
    assert double(2) == 4


def test_many():
    for x in range(-5, 6):
        assert double(x) == 2 * x
"""

SOLUTION = "def double(x):\n    return 2 * x\n"
STARTER = 'def double(x):\n    """Return 2 * x."""\n    raise NotImplementedError("TODO")\n'


def make_exercise(root: Path, exercise_id: int = 189, slug: str = "double", *, timeout: int = 3,
                  problem: str | None = None, test: str = TEST, solution: str = SOLUTION,
                  starter: str = STARTER) -> Path:
    """Write the exercise folder ``root/<id>_<slug>`` and return it."""
    folder = root / f"{exercise_id}_{slug}"
    folder.mkdir(parents=True)
    (folder / "problem.md").write_text(problem or PROBLEM.format(id=exercise_id, timeout=timeout), encoding="utf-8")
    (folder / "test.py").write_text(test, encoding="utf-8")
    (folder / "solution.py").write_text(solution, encoding="utf-8")
    (folder / "starter.py").write_text(starter, encoding="utf-8")
    return folder


@pytest.fixture
def exercise(tmp_path):
    return exercises.load_exercise(make_exercise(tmp_path / "practice"))


def judge_source(exercise, tmp_path, source: str, timeout: float = 3, memory_mb: int | None = None) -> dict:
    """Judge ``source`` through the real isolated path; also check the file is left untouched."""
    file = tmp_path / "answer.py"
    file.write_text(textwrap.dedent(source), encoding="utf-8")
    before = hashlib.sha256(file.read_bytes()).hexdigest()
    verdict = judge.run_isolated(exercise, file, timeout, memory_mb or judge.memory_limit_mb(exercise))
    assert hashlib.sha256(file.read_bytes()).hexdigest() == before, "judging modified the learner's file"
    json.dumps(verdict)   # always serialisable, whatever the submission printed
    return verdict


def process_gone(pid: int, wait: float = 3.0) -> bool:
    """True when ``pid`` no longer runs (gone, or a zombie nobody has reaped yet)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------
# Hostile and broken submissions: none passes, none hangs the judge, the file is never modified

HOSTILE = {
    "syntax_error": ("def double(x) return 2 * x\n", {"syntax_error"}),
    "import_error": ("import no_such_module_for_the_judge_test\ndef double(x):\n    return 2 * x\n", {"import_error"}),
    "missing_function": ("def triple(x):\n    return 3 * x\n", {"import_error"}),
    "wrong_answer": ("def double(x):\n    return x + 2\n", {"wrong_answer"}),
    "exception": ("def double(x):\n    raise ValueError('boom')\n", {"error"}),
    "infinite_loop": ("def double(x):\n    while True:\n        pass\n", {"timeout"}),
    "sys_exit_at_import": ("import sys\nsys.exit(0)\n", {"error"}),
    "os_exit_at_import": ("import os\nos._exit(0)\n", {"crashed"}),
    "sys_exit_in_call": ("import sys\ndef double(x):\n    sys.exit(0)\n", {"error"}),
    "os_exit_in_call": ("import os\ndef double(x):\n    os._exit(0)\n", {"crashed"}),
    "segfault": ("import ctypes\ndef double(x):\n    ctypes.string_at(0)\n    return 2 * x\n", {"crashed"}),
    "allocate_4_gib": ("def double(x):\n    block = bytearray(4 << 30)\n    return 2 * x\n", {"memory_limit"}),
    "print_20_mb": ("def double(x):\n    print('x' * (20 << 20))\n    return 2 * x\n", {"output_limit"}),
    "write_20_mb_to_fd": ("import os\ndef double(x):\n    os.write(1, b'y' * (20 << 20))\n    return 2 * x\n",
                          {"output_limit"}),
    "infinite_recursion": ("def double(x):\n    return double(x)\n", {"error"}),
    "ignores_sigterm": ("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "def double(x):\n    while True:\n        pass\n", {"timeout"}),
    "reads_stdin": ("def double(x):\n    return int(input())\n", {"error"}),
    "wrong_answer_after_stdin_read": ("import sys\ndef double(x):\n    sys.stdin.read()\n    return x\n",
                                      {"wrong_answer"}),
    # Deliberate forgery from inside the child: caught by the parent's consistency check.
    "patches_the_judge_core": ("import sys\ncore = sys.modules['judging.judge_core']\nreal = core._verdict\n"
                               "def forged(*args):\n    verdict = real(*args)\n    verdict['status'] = 'accepted'\n"
                               "    return verdict\ncore._verdict = forged\ndef double(x):\n    return x\n", {"error"}),
    "forges_the_result_file": (
        "import json, os, sys\nframe = sys._getframe()\nwhile 'result_file' not in frame.f_locals:\n"
        "    frame = frame.f_back\ntest = {'name': 'test_example', 'outcome': 'passed', 'message': '', 'details': '',"
        " 'stdout': '', 'duration': 0.0}\nverdict = {'schema': 1, 'status': 'accepted', 'message': '', 'details': '',"
        " 'tests': [test], 'counts': {'passed': 1, 'failed': 0, 'error': 0, 'skipped': 0, 'total': 1},"
        " 'output': '', 'output_truncated': False, 'duration': 0.0}\n"
        "open(frame.f_locals['result_file'], 'w').write(json.dumps({'token': frame.f_locals['token'], 'verdicts': [verdict]}))\n"
        "os._exit(0)\n", {"error"}),
    "forges_a_malformed_result": (
        "import json, os, sys\nframe = sys._getframe()\nwhile 'result_file' not in frame.f_locals:\n"
        "    frame = frame.f_back\n"
        "open(frame.f_locals['result_file'], 'w').write(json.dumps({'token': frame.f_locals['token'], 'verdicts': [{}]}))\n"
        "os._exit(0)\n", {"error"}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_submission_is_contained(exercise, tmp_path, name):
    source, expected = HOSTILE[name]
    # Only the loops wait out their limit; the rest get room for a busy machine.
    verdict = judge_source(exercise, tmp_path, source, timeout=2 if "timeout" in expected else 10)
    assert verdict["status"] in expected, (name, verdict["status"], verdict["message"])
    assert verdict["counts"]["passed"] < 2 or verdict["status"] != "accepted"


def test_messages_say_what_happened(exercise, tmp_path):
    v = judge_source(exercise, tmp_path, HOSTILE["wrong_answer"][0])
    failed = next(t for t in v["tests"] if t["outcome"] == "failed")
    assert failed["name"] == "test_many" and "assert" in failed["message"] and "==" in failed["message"]
    assert "test.py:" in failed["details"]
    assert "SIGSEGV" in judge_source(exercise, tmp_path, HOSTILE["segfault"][0])["message"]
    v = judge_source(exercise, tmp_path, HOSTILE["infinite_loop"][0], timeout=2)
    assert v["details"].startswith(("submission.py:2 in double", "submission.py:3 in double"))   # where it hung
    v = judge_source(exercise, tmp_path, HOSTILE["infinite_recursion"][0])
    assert "RecursionError" in v["tests"][0]["message"]
    v = judge_source(exercise, tmp_path, HOSTILE["missing_function"][0])
    assert "cannot import name 'double'" in v["message"]
    v = judge_source(exercise, tmp_path, HOSTILE["reads_stdin"][0])
    assert "EOFError" in v["tests"][0]["message"]


def test_background_process_is_killed_afterwards(exercise, tmp_path):
    pid_file = tmp_path / "pid"
    source = f"""\
        import subprocess, sys
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(proc.pid))
        def double(x):
            return 2 * x
        """
    verdict = judge_source(exercise, tmp_path, source)
    assert verdict["status"] == "accepted"   # a correct answer still counts, and the judge did not wait
    assert process_gone(int(pid_file.read_text()))


def daemonizing_answer(pid_file: Path, before: str = "") -> str:
    """A correct answer that first runs ``before`` (lines of code), then leaves a grandchild running outside its
    process group (a double fork and setsid) that writes its pid to ``pid_file``."""
    return textwrap.dedent(f"""\
        import os, time
        {{before}}
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pid_file)!r}, "w").write(str(os.getpid()))
                time.sleep(120)
            os._exit(0)
        os.wait()
        def double(x):
            return 2 * x
        """).replace("{before}", textwrap.dedent(before).strip())


def test_daemonized_process_is_killed_afterwards(exercise, tmp_path):
    # A double fork and setsid leave the child's process group; the judge still finds and kills it.
    pid_file = tmp_path / "pid"
    assert judge_source(exercise, tmp_path, daemonizing_answer(pid_file))["status"] == "accepted"
    assert process_gone(int(pid_file.read_text()))


def test_the_command_line_forks_a_child_that_runs_like_a_new_interpreter(root, tmp_path):
    # The command-line judge of a pure-Python exercise forks its child (no second interpreter start; this test process
    # has loaded torch, so its own judgements start a new interpreter instead). The child must look like
    # `python -m judging.sandbox` to the submission, also to multiprocessing's spawn, and what it leaves running is
    # killed: a forked grandchild carries the judge's environment, not the run marker, and is found by start time.
    forked, pid_file, answer = tmp_path / "forked", tmp_path / "pid", tmp_path / "answer.py"
    answer.write_text(daemonizing_answer(pid_file, before=f"""
        import multiprocessing, sys
        assert sys.modules["__main__"].__spec__.name == "judging.sandbox", sys.modules["__main__"]
        assert os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") == "1" and sys.dont_write_bytecode
        open({str(forked)!r}, "w").write(str("judging.cli" in sys.modules))   # a new interpreter has not imported it
        process = multiprocessing.get_context("spawn").Process(target=os._exit, args=(3,))
        process.start()
        process.join(30)
        assert process.exitcode == 3, process.exitcode
        """))
    result = cli(root, "189", str(answer), "--json", "--timeout", "30")
    assert json.loads(result.stdout)["status"] == "accepted", result.stdout + result.stderr
    assert forked.read_text() == "True"
    assert process_gone(int(pid_file.read_text()))


def test_a_judge_with_threads_or_torch_starts_a_new_interpreter_instead_of_forking(monkeypatch):
    import threading

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    assert sandbox._ForkedChild.safe() == (threading.active_count() == 1)
    monkeypatch.setitem(sys.modules, "torch", object())
    assert not sandbox._ForkedChild.safe()   # torch's thread pools and fork handlers do not survive a fork
    monkeypatch.delitem(sys.modules, "torch")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not sandbox._ForkedChild.safe()   # fork() copies one thread: another's locks would stay held
    finally:
        stop.set()
        other.join()


def test_interrupting_the_judge_kills_the_child(root, tmp_path):
    pid_file, answer = tmp_path / "pid", tmp_path / "loop.py"
    answer.write_text(f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n")
    env = {**os.environ, "MINI_PLATFORM_PRACTICE_DIR": str(root)}
    judge_cli = subprocess.Popen([sys.executable, str(PRACTICE / "judge.py"), "189", str(answer), "--timeout", "60"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for _ in range(400):   # the submission is running once it wrote its pid
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    judge_cli.send_signal(signal.SIGINT)   # Ctrl+C
    _, err = judge_cli.communicate(timeout=30)
    assert judge_cli.returncode == 130, err.decode()
    assert process_gone(int(pid_file.read_text()))


def test_non_daemon_thread_does_not_hold_the_judge(exercise, tmp_path):
    source = """\
        import threading, time
        threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)], daemon=False).start()
        def double(x):
            return 2 * x
        """
    assert judge_source(exercise, tmp_path, source)["status"] == "accepted"   # not "timeout"


def test_non_utf8_output_is_reported_not_fatal(exercise, tmp_path):
    source = """\
        import os, sys
        def double(x):
            sys.stdout.buffer.write(b"\\xff\\xfe\\x80 raw")
            sys.stdout.flush()
            os.write(1, b"\\xc3\\x28")
            return 2 * x + (x == 3)
        """
    verdict = judge_source(exercise, tmp_path, source)
    assert verdict["status"] == "wrong_answer"
    assert "\ufffd" in verdict["tests"][0]["stdout"] and "raw" in verdict["tests"][0]["stdout"]


def test_progress_lines_reach_the_callback_and_stay_out_of_stderr():
    seen, err, pending = [], bytearray(), bytearray(b"warning\n" + sandbox.PROGRESS.encode() + b"reference llama\npart")
    sandbox._progress_lines(pending, err, seen.append)
    assert seen == ["reference llama"] and bytes(err) == b"warning\n" and bytes(pending) == b"part"


def test_forged_or_missing_result_is_never_a_pass(tmp_path):
    result = tmp_path / "result.json"
    assert sandbox.read_result(str(result), "token") is None
    result.write_text(json.dumps({"token": "guess", "verdicts": [{"status": "accepted"}]}))
    assert sandbox.read_result(str(result), "token") is None
    result.write_text(json.dumps({"token": "token", "verdicts": ["accepted"]}))
    assert sandbox.read_result(str(result), "token") is None
    result.write_text(json.dumps({"token": "token", "verdicts": [{"status": "accepted"}]}))
    assert sandbox.read_result(str(result), "token") == [{"status": "accepted"}]


def test_solution_passes_and_starter_fails(exercise, tmp_path):
    assert judge_source(exercise, tmp_path, SOLUTION)["status"] == "accepted"
    assert judge_source(exercise, tmp_path, STARTER)["status"] == "error"


# ---------------------------------------------------------------------------------------------
# The command line


def cli(root: Path, *args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "MINI_PLATFORM_PRACTICE_DIR": str(root), **(env or {})}
    full_env.pop("NO_COLOR", None)
    full_env.pop("MINI_PLATFORM_LANG", None)
    return subprocess.run([sys.executable, str(PRACTICE / "judge.py"), *args], capture_output=True,
                          text=True, env=full_env, cwd=cwd or root, timeout=60)


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "practice"
    make_exercise(root)
    return root


def test_first_use_creates_workspace_then_judges_it(root):
    first = cli(root, "189")
    workspace = root / "workspace" / "189_double.py"
    assert first.returncode == 1
    assert "实现 `double(x)`" in first.stdout and "运行出错 (error)" in first.stdout   # statement + verdict
    assert workspace.read_text() == STARTER
    workspace.write_text(SOLUTION)
    second = cli(root, "189")
    assert second.returncode == 0, second.stdout
    assert "实现 `double(x)`" not in second.stdout and "通过 (accepted)" in second.stdout
    assert workspace.read_text() == SOLUTION   # never overwritten
    assert "\033[" not in second.stdout          # no colour when stdout is not a terminal


def test_explicit_file_json_and_english(root, tmp_path):
    answer = tmp_path / "mine.py"
    answer.write_text("def double(x):\n    return x + 2\n")
    done = cli(root, "189", str(answer), "--json")
    verdict = json.loads(done.stdout)
    assert done.returncode == 1 and verdict["status"] == "wrong_answer" and verdict["exercise"] == 189
    assert [(t["name"], t["outcome"]) for t in verdict["tests"]] == [("test_example", "passed"), ("test_many", "failed")]
    assert "assert" in verdict["tests"][1]["message"]
    english = cli(root, "189", str(answer), "--lang", "en")
    assert "Result: wrong_answer" in english.stdout and "1/2 tests passed" in english.stdout
    assert not (root / "workspace").exists()   # judging an explicit file creates no workspace
    assert not (root / ".judge_state.json").exists()   # ... and records no progress


def test_relative_file_path_is_judged_from_the_callers_directory(root, tmp_path):
    (tmp_path / "mine.py").write_text(SOLUTION)
    done = cli(root, "189", "mine.py", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["status"] == "accepted"


def test_timeout_option_overrides_the_front_matter(root, tmp_path):
    answer = tmp_path / "loop.py"
    answer.write_text("def double(x):\n    while True:\n        pass\n")
    verdict = json.loads(cli(root, "189", str(answer), "--json", "--timeout", "1").stdout)
    assert verdict["status"] == "timeout" and verdict["timeout"] == 1


def test_bad_input_gets_a_bilingual_error(root, tmp_path):
    for args, needle in [(("999",), "999"), (("abc",), "abc"), (("189", str(tmp_path / "nope.py")), "nope.py")]:
        done = cli(root, *args)
        assert done.returncode == 2 and needle in done.stderr
        assert "错误" in done.stderr and "error" in done.stderr and "Traceback" not in done.stderr
    problem = root / "189_double" / "problem.md"
    problem.write_text(problem.read_text().replace("difficulty: easy", "difficulty: trivial"))
    done = cli(root, "189")
    assert done.returncode == 2 and "difficulty" in done.stderr and "trivial" in done.stderr


def test_list_show_reset_and_state(root):
    assert "未评测" in cli(root, "list").stdout
    cli(root, "189")
    listing = cli(root, "list", "--lang", "en")
    assert "189" in listing.stdout and "error 0/2" in listing.stdout
    assert json.loads((root / ".judge_state.json").read_text())["189"]["status"] == "error"
    shown = cli(root, "show", "189", "--lang", "en")
    assert "Implement `double(x)`" in shown.stdout and "实现" not in shown.stdout and "double(2)   # 4" in shown.stdout
    workspace = root / "workspace" / "189_double.py"
    workspace.write_text("# my work\n")
    assert cli(root, "reset", "189").returncode == 0
    assert workspace.read_text() == STARTER
    backups = list((root / "workspace" / "backup").glob("189_double.*.py"))
    assert [b.read_text() for b in backups] == ["# my work\n"]
    workspace.write_text("# more work\n")
    cli(root, "reset", "189")   # a second reset in the same second keeps both backups
    assert sorted(b.read_text() for b in (root / "workspace" / "backup").iterdir()) == ["# more work\n", "# my work\n"]


def test_doctor_reports_the_machine(root):
    done = cli(root, "doctor", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0
    assert report["pytest"] and report["exercises"] == {"189": "可以"}
    assert set(report) >= {"python", "torch", "triton", "torch_npu", "TRITON_INTERPRET", "nvidia_gpu", "ascend_npu"}


def test_check_accepts_good_exercises_and_flags_bad_ones(tmp_path):
    root = tmp_path / "practice"
    make_exercise(root)
    assert cli(root, "check").returncode == 0
    make_exercise(root, 188, "starter_passes", starter=SOLUTION)
    make_exercise(root, 187, "solution_fails", solution="def double(x):\n    return x\n")
    make_exercise(root, 186, "no_example", test=TEST.replace("test_example", "test_first"))
    make_exercise(root, 185, "starter_broken", starter="def double(x) pass\n")
    done = cli(root, "check")
    assert done.returncode == 1
    for name in ("188_starter_passes", "187_solution_fails", "186_no_example", "185_starter_broken"):
        assert f"FAIL {name}" in done.stdout
    assert "ok   189_double" in done.stdout
    assert cli(root, "check", "189").returncode == 0


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty:
        def isatty(self):
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert judge.Style(Tty())("x", "31") == "\033[31mx\033[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert judge.Style(Tty())("x", "31") == "x"


def test_repo_root_forwarder(root, tmp_path):
    answer = tmp_path / "ok.py"
    answer.write_text(SOLUTION)
    done = subprocess.run([sys.executable, str(ROOT / "judge.py"), "189", str(answer), "--json"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MINI_PLATFORM_PRACTICE_DIR": str(root)})
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "accepted"


# ---------------------------------------------------------------------------------------------
# Wrong solutions, hints, sticky progress, the reference solution

HINTS = "## 1\n想想乘法。\n\n**English:** think of multiplication.\n\n## 2\n`return 2 * x`\n\n**English:** `return 2 * x`\n"


@pytest.mark.slow   # about 35 s of judge children (a time-out among them): the slow tier, with the maintainer check
def test_check_requires_every_wrong_solution_rejected_in_one_batch(tmp_path):
    root = tmp_path / "practice"
    folder = make_exercise(root)
    wrong = folder / "wrong"
    wrong.mkdir()
    (wrong / "01_plus_two.py").write_text("# Mistake: adds two instead of doubling.\ndef double(x):\n    return x + 2\n")
    (wrong / "02_loops.py").write_text("# Mistake: never returns.\ndef double(x):\n    while True:\n        pass\n")
    done = cli(root, "check", "--json")
    report = json.loads(done.stdout)[0]
    assert done.returncode == 0, done.stdout
    assert [(w["file"], w["status"]) for w in report["wrong"]] == [("wrong/01_plus_two.py", "wrong_answer"),
                                                                   ("wrong/02_loops.py", "timeout")]
    assert any("hints.md" in w for w in report["warnings"]) and any("wrong/" in w for w in report["warnings"])
    (wrong / "03_right_after_all.py").write_text("# Mistake: none, really.\ndef double(x):\n    return x * 2\n")
    (wrong / "04_no_mistake_line.py").write_text("def double(x):\n    return 0\n")
    done = cli(root, "check", "--lang", "en")
    assert done.returncode == 1 and "FAIL 189_double" in done.stdout
    assert "wrong/03_right_after_all.py is accepted" in done.stdout and "none, really." in done.stdout
    assert "04_no_mistake_line.py must be '# Mistake: ...'" in done.stdout


def test_batch_judges_again_alone_what_it_could_not_report(exercise, tmp_path):
    files = []
    for i, source in enumerate([SOLUTION, "import os\nos._exit(3)\n", STARTER]):
        files.append(tmp_path / f"f{i}.py")
        files[-1].write_text(source)
    statuses = [v["status"] for v in sandbox.run_batch(exercise, files, 10, 1024)]
    assert statuses == ["accepted", "crashed", "error"]


def test_hints_one_at_a_time_and_remembered(root):
    assert cli(root, "hint", "189").returncode == 1   # none yet
    (root / "189_double" / "hints.md").write_text(HINTS)
    first = cli(root, "hint", "189", "--lang", "en").stdout
    assert "Hint 1/2 (new)" in first and "think of multiplication" in first and "return 2 * x" not in first
    second = cli(root, "hint", "189").stdout
    assert "提示 2/2（新）" in second and "想想乘法" in second and "`return 2 * x`" in second
    assert json.loads((root / ".judge_state.json").read_text())["189"]["hints"] == 2
    (root / "189_double" / "hints.md").write_text("## 1\nno english\n")
    bad = cli(root, "hint", "189")
    assert bad.returncode == 2 and "**English:**" in bad.stderr


def test_solved_sticks_and_the_reference_is_offered_after_acceptance(root):
    workspace = root / "workspace" / "189_double.py"
    assert cli(root, "solution", "189").returncode == 1            # not before trying
    cli(root, "189")                                               # the starter: error
    workspace.write_text(SOLUTION)
    accepted = cli(root, "189", "--lang", "en").stdout
    assert "solution 189" in accepted
    workspace.write_text("def double(x):\n    return x\n")
    again = cli(root, "189", "--lang", "en").stdout
    assert "You solved this one before" in again
    listing = cli(root, "list", "--lang", "en").stdout
    assert "solved" in listing and "last: wrong_answer 0/2" in listing and "1/1 solved" in listing
    entry = json.loads((root / ".judge_state.json").read_text())["189"]
    assert entry["status"] == "wrong_answer" and entry["best"]["status"] == "accepted" and entry["runs"] == 3
    shown = cli(root, "solution", "189")
    assert shown.returncode == 0 and shown.stdout == SOLUTION


def test_reference_before_acceptance_needs_failed_runs_and_confirmation(root):
    for _ in range(judge.SOLUTION_AFTER):
        cli(root, "189")
    refused = cli(root, "solution", "189", "--lang", "en")
    assert refused.returncode == 1 and "--yes" in refused.stdout   # not a terminal: no prompt
    assert cli(root, "solution", "189", "--yes").stdout == SOLUTION


# ---------------------------------------------------------------------------------------------
# Feedback the judge adds around the verdict


def test_a_crash_names_the_test_that_was_running_and_no_temporary_path(exercise, tmp_path):
    verdict = judge_source(exercise, tmp_path, "import os\ndef double(x):\n    if x < 0:\n        os.abort()\n    return 2 * x\n",
                           timeout=10)
    assert verdict["status"] == "crashed" and verdict["running"] == "test_many"
    assert verdict["triton_interpreter"] is False   # a pure-Python exercise
    assert "mini-judge-" not in verdict["process_stderr"] and 'File "submission.py", line 4' in verdict["process_stderr"]
    assert "The test running when the process died: test_many" in judge.render.text(judge.render.view(verdict), "en")


PROJECT_TEST = """\
import sys
from pathlib import Path

import submission

SITE = Path(submission.PROJECT).parent / "site"


def test_example():
    sys.path.insert(0, str(SITE))
    import plugin
    assert plugin.answer() == 42
"""


def test_a_project_exercise_points_at_the_project_and_its_files(tmp_path):
    """Like the capstone: the exercise's files name a project folder (PROJECT), which the test installs
    as links; the judge points at the folder and shows the learner's own frames in it."""
    root = tmp_path / "practice"
    project, reference = tmp_path / "mine" / "project", tmp_path / "reference"
    for folder, body in ((project, "    raise NotImplementedError('answer')"), (reference, "    return 42")):
        folder.mkdir(parents=True)
        (folder / "plugin.py").write_text(f"def answer():\n{body}\n")
    (project.parent / "site").mkdir()
    (project.parent / "site" / "plugin.py").symlink_to(project / "plugin.py")
    make_exercise(root, 188, "project", test=PROJECT_TEST, solution=f"PROJECT = {str(reference)!r}\n",
                  starter=f"PROJECT = {str(project)!r}\n")
    workspace = project.parent / "188_project.py"
    workspace.write_text(f"PROJECT = {str(project)!r}\n")
    done = cli(root, "188", str(workspace), "--lang", "en", cwd=tmp_path)
    assert f"(mine/project/, named by mine/188_project.py)" in done.stdout
    assert "[a TODO of the starter is not done yet (NotImplementedError)]" in done.stdout
    assert "mine/project/plugin.py:2 in answer" in done.stdout and "site/plugin.py" not in done.stdout
    assert "Edit your project mine/project/ and run again" in done.stdout
    for _ in range(judge.SOLUTION_AFTER):
        cli(root, "188")
    shown = cli(root, "solution", "188", "--yes", "--lang", "en", cwd=tmp_path).stdout
    assert "The reference is the whole project reference/" in shown
    assert "==> reference/plugin.py <==\ndef answer():\n    return 42\n" in shown
