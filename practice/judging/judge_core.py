"""The test-running core of the judge: one function, ``run_tests``, shared by every front end.

The command-line judge (``practice/judge.py``) calls it inside an isolated child process; the
site's browser worker calls it inside Pyodide (Python 3.14). Both therefore give the same verdict
for the same code. This module uses only the standard library and pytest: no subprocess, signals,
threads or torch, so it runs in both places. Time limits, memory limits and killing belong to the
caller (the child process in the CLI, worker termination in the browser).

``run_tests(test_file, submission_file, workdir) -> dict`` copies the exercise's test file and the
learner's file into a fresh run directory under ``workdir`` (as ``test.py`` and ``submission.py``),
imports the submission, runs pytest in-process, removes the run directory and everything it
imported, and returns a JSON-serialisable verdict (``SCHEMA_VERSION`` = 2):

    {
      "schema": 2,
      "status": str,        # one of STATUSES, see below
      "message": str,       # why, when the status is not about individual tests ("" otherwise)
      "details": str,       # traceback of that problem (file:line and source), "" otherwise
      "tests": [            # in run order; empty when nothing could be collected
        {"name": "test_example",          # test function name (parametrized: "test_x[3]")
         "outcome": "passed" | "failed" | "error" | "skipped",
         "message": str,                  # failed: the assertion with its values, as pytest's
                                          #   assertion rewriting explains it; error: "Type: text"
         "details": str,                  # frames in test.py/submission.py: "file:line in func" + source
         "stdout": str,                   # what the test printed (stdout and stderr together)
         "duration": float,               # seconds
         "compare": dict | None},         # a failed comparison's whole values, see _compare_data
      ],
      "counts": {"passed": int, "failed": int, "error": int, "skipped": int, "total": int},
      "output": str,        # printed outside any test (e.g. at import time of the submission)
      "output_truncated": bool,  # more than OUTPUT_LIMIT bytes were printed; the rest was dropped
      "duration": float,    # seconds for the whole call
    }

Statuses produced here (the CLI adds ``timeout``, ``crashed`` and, from the process, also
``memory_limit`` and ``output_limit``):

    accepted      every collected test passed (tests skipped by the test file's own skip/skipif/xfail
                  markers allowed, at least one passed)
    wrong_answer  some test failed an assertion (or pytest.fail, or pytest.raises saw no exception),
                  none raised anything else
    error         a test raised an exception other than AssertionError (incl. SystemExit), or was
                  skipped by a pytest.skip()/xfail() call rather than a marker; or the submission
                  raised at import time, or changed test.py/pytest.ini/conftest.py in the run
                  directory while it was imported (TamperingError); or pytest itself failed
    syntax_error  the submission (or test file) cannot be compiled
    import_error  an import failed: the submission imports a missing module, or the test file
                  asks the submission for a name it does not define ("missing function")
    memory_limit  MemoryError was raised (the CLI's child runs under an address-space limit)
    output_limit  more than OUTPUT_LIMIT bytes were printed
    no_tests      the test file defines no tests
    interrupted   KeyboardInterrupt stopped the run (the browser's soft stop)

A failed ``assert a <op> b`` in test.py, or a failed ``torch.testing.assert_close``, also leaves
``compare``: the two values whole (up to COMPARE_LIMIT characters each), or for tensors their shape,
dtype and the first index where they differ, read through the tensors' own methods (torch is never
imported here). Standard input is empty: ``input()`` raises EOFError in the CLI and in the browser.

Precedence when several apply: interrupted, output_limit, memory_limit, then the per-test result.

Limits of the guard: the submission runs in the same interpreter as pytest and this module, so code
written to subvert the judge (patching this module, pytest or the collector in memory) can always
forge a verdict; no in-process grader can prevent that. What is closed: every accident (exits,
crashes, output floods, KeyboardInterrupt) and the cheap tricks: pytest.skip()/xfail() from code,
rewriting test.py/pytest.ini or adding conftest.py at import time, PYTEST_ADDOPTS/PYTEST_PLUGINS.
The CLI also checks that the verdict it reads is consistent with the test file (practice/judge.py).
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import marshal
import os
import pprint
import shutil
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path

import pytest

SCHEMA_VERSION = 2
STATUSES = ("accepted", "wrong_answer", "error", "syntax_error", "import_error",
            "memory_limit", "output_limit", "no_tests", "interrupted")
OUTPUT_LIMIT = 1 << 20      # bytes printed per run before the rest is dropped (output_limit)
TEXT_LIMIT = 8000           # characters kept per message/details/stdout field
COMPARE_LIMIT = 4000        # characters kept of each value of a failed comparison
_SUBMISSION, _TEST = "submission", "test"
# python_files names the test file alone: pytest rewrites the assertions of every module matching it,
# and a wider pattern would rewrite (slowly, uncached) each module torch imports during the tests.
_PYTEST_INI = f"[pytest]\npython_files = {_TEST}.py\npython_functions = test*\nxfail_strict = false\n"
_PYTEST_ARGS = ["-s", "--import-mode=importlib", "-p", "no:cacheprovider", "-q", "--tb=no",
                "--continue-on-collection-errors", "-p", "no:faulthandler", "-p", "no:logging", "-p", "no:doctest",
                "-p", "no:junitxml", "-p", "no:pastebin", "-p", "no:legacypath",
                "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:stepwise"]


_SKIP_FORBIDDEN = ("only the test file's skip/skipif/xfail markers may skip a test; "
                   "pytest.skip()/pytest.xfail() was called while it ran: ")
# Settings read from the environment that would change which tests run or what pytest loads.
_PYTEST_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")


class TamperingError(RuntimeError):
    """The submission changed the judge's own files in the run directory before the tests ran."""


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


class _CappedBytes(io.RawIOBase):
    """A byte sink that keeps the first ``limit`` bytes and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.limit = limit
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        n = len(b)
        self.total += n
        room = self.limit - len(self.data)
        if room > 0:
            self.data += bytes(b[:room])
        return n

    def text(self, start: int = 0, end: int | None = None) -> str:
        return bytes(self.data[start:end]).decode("utf-8", errors="replace")

    def text_outside(self, spans: list[tuple[int, int]]) -> str:
        """What was printed outside the given byte ranges."""
        pieces, position = [], 0
        for start, end in spans:
            pieces.append(self.text(position, start))
            position = end
        pieces.append(self.text(position))
        return "".join(pieces)


def _frames(excinfo_tb, run_dir: str) -> str:
    """The traceback frames that lie in the run directory (test.py / submission.py) with their source."""
    entries: list[list] = []   # [text, repeats]; identical consecutive frames (recursion) folded
    for frame in traceback.extract_tb(excinfo_tb):
        if os.path.dirname(os.path.abspath(frame.filename)) == run_dir:
            text = f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"
            text += f"\n    {frame.line}" if frame.line else ""
            if entries and entries[-1][0] == text:
                entries[-1][1] += 1
            else:
                entries.append([text, 0])
    lines = [text + (f"\n    [the frame above repeated {n} more times]" if n else "") for text, n in entries]
    return "\n".join(lines[-20:])


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        where = f" ({os.path.basename(exc.filename or '')}, line {exc.lineno})" if exc.lineno else ""
        return f"{type(exc).__name__}: {exc.msg}{where}"
    return _clip("".join(traceback.format_exception_only(type(exc), exc)).strip())


def _shown(value) -> str:
    """``value`` as a learner reads it: pretty-printed when small, repr'd and clipped when large."""
    try:
        text = repr(value)
        if len(text) <= COMPARE_LIMIT and not _is_tensor(value):
            text = pprint.pformat(value, width=88, compact=True, sort_dicts=True)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ in the submission
        return f"<{type(value).__name__} object; repr() raised {type(exc).__name__}>"
    return _clip(text, COMPARE_LIMIT)


def _is_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and all(hasattr(value, a) for a in ("shape", "dtype", "tolist"))


# Default tolerances of torch.testing.assert_close by dtype (rtol, atol), when it was called without them.
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _tensor_compare(actual, expected, rtol=None, atol=None, equal_nan=False) -> dict:
    """Shape, dtype, how many elements differ and the first index where they do, using only the
    tensors' own methods."""
    def info(t) -> dict:
        shown = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "device": str(t.device)}
        if t.numel() <= 64:
            shown["values"] = _shown(t.detach().cpu().tolist())
        return shown

    data = {"kind": "tensor", "actual": info(actual), "expected": info(expected)}
    if list(actual.shape) != list(expected.shape):
        return data
    try:
        a, e = actual.detach().cpu(), expected.detach().cpu()
        if a.dtype.is_floating_point or e.dtype.is_floating_point or a.dtype.is_complex:
            default = _TOLERANCES.get(str(e.dtype).replace("torch.", ""), (1.3e-6, 1e-5))
            rtol = default[0] if rtol is None else rtol
            atol = default[1] if atol is None else atol
            a, e = a.double(), e.double()
            bad = ~a.isclose(e, rtol=rtol, atol=atol, equal_nan=equal_nan)
            data.update(rtol=rtol, atol=atol)
        else:
            bad = a != e
        count = int(bad.sum().item())
        data.update(mismatched=count, total=int(bad.numel()))
        if count:
            index = bad.nonzero()[0].tolist()
            data.update(index=index, actual_value=_shown(a[tuple(index)].item()),
                        expected_value=_shown(e[tuple(index)].item()))
    except Exception:  # noqa: BLE001 - shapes and dtypes are still worth showing
        pass
    return data


def _compare_data(op: str, left, right) -> dict:
    """What a failed ``left <op> right`` shows: both values whole (clipped), or tensor summaries."""
    if _is_tensor(left) and _is_tensor(right):
        return {**_tensor_compare(left, right), "op": op}
    kind = "text" if isinstance(left, str) and isinstance(right, str) else "values"
    if kind == "text":
        return {"kind": kind, "op": op, "left": _clip(left, COMPARE_LIMIT), "right": _clip(right, COMPARE_LIMIT)}
    return {"kind": kind, "op": op, "left": _shown(left), "right": _shown(right)}


def _assert_close_data(tb) -> dict | None:
    """The arguments of a failed torch.testing.assert_close, found in its frame on the traceback."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "assert_close" and "torch" in frame.f_code.co_filename:
            local = frame.f_locals
            actual, expected = local.get("actual"), local.get("expected")
            if _is_tensor(actual) and _is_tensor(expected):
                return _tensor_compare(actual, expected, local.get("rtol"), local.get("atol"),
                                       bool(local.get("equal_nan")))
            return {"kind": "values", "op": "close", "left": _shown(actual), "right": _shown(expected)}
        tb = tb.tb_next
    return None


class _Collector:
    """pytest plugin: records each test's outcome, message, traceback and printed output."""

    def __init__(self, run_dir: str, sink: _CappedBytes, stream: io.TextIOWrapper) -> None:
        self.run_dir, self.sink, self.stream = run_dir, sink, stream
        self.tests: list[dict] = []
        self.spans: list[tuple[int, int]] = []   # byte ranges of the sink printed inside tests
        self.collect_error: BaseException | None = None
        self.memory = False
        self.interrupted = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.stream.flush()
        start = len(self.sink.data)
        self.current = {"name": item.name, "outcome": "passed", "message": "", "details": "",
                        "stdout": "", "duration": 0.0, "compare": None}
        self.compared = None
        try:
            return (yield)
        except BaseException as exc:   # KeyboardInterrupt (the browser's stop) ends the session here
            self.current.update(outcome="error", message=_describe(exc))
            raise
        finally:
            self.stream.flush()
            self.current["stdout"] = _clip(self.sink.text(start))
            self.spans.append((start, len(self.sink.data)))
            self.tests.append(self.current)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        test = self.current
        test["duration"] = round(test["duration"] + call.duration, 4)
        if call.excinfo is None or test["outcome"] != "passed":
            return report
        exc = call.excinfo.value
        if report.skipped:
            if any(item.get_closest_marker(name) for name in ("skip", "skipif", "xfail")):
                test["outcome"], test["message"] = "skipped", _describe(exc)
            else:   # pytest.skip()/xfail() called by code, e.g. the submission dodging a test it fails
                test["outcome"], test["message"] = "error", _SKIP_FORBIDDEN + _describe(exc)
            return report
        self.memory |= isinstance(exc, MemoryError)
        # A wrong answer: a failed assert, or pytest.fail / pytest.raises' "DID NOT RAISE".
        failed = call.when == "call" and isinstance(exc, (AssertionError, pytest.fail.Exception))
        test["outcome"] = "failed" if failed else "error"
        test["message"] = _clip(call.excinfo.exconly()) if failed else _describe(exc)
        test["details"] = _clip(_frames(call.excinfo.tb, self.run_dir))
        if isinstance(exc, AssertionError):
            try:
                test["compare"] = _assert_close_data(call.excinfo.tb) or self.compared
            except Exception:  # noqa: BLE001 - the message is still there
                pass
        return report

    def pytest_assertrepr_compare(self, config, op, left, right):
        """Called by pytest's assertion rewriting as a comparison in test.py fails: keep the values."""
        try:
            self.compared = _compare_data(op, left, right)
        except Exception:  # noqa: BLE001
            self.compared = None
        return None   # pytest's own explanation stays in the message

    def pytest_sessionstart(self, session):
        # pytest's terminal reporter keeps the stream it saw at configure time (a null sink);
        # from here on, everything the code under test prints goes to the capped sink.
        sys.stdout = sys.stderr = self.stream

    def pytest_exception_interact(self, node, call, report):
        if call.when == "collect" and call.excinfo is not None and self.collect_error is None:
            exc = call.excinfo.value
            while type(exc).__name__ == "CollectError" and exc.__cause__ is not None:
                exc = exc.__cause__   # pytest wraps the real ImportError/SyntaxError
            self.collect_error = exc

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True


def _import_submission() -> BaseException | None:
    """Import submission.py once, before pytest, so its own failures are reported as such."""
    try:
        __import__(_SUBMISSION)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
        sys.modules.pop(_SUBMISSION, None)
        return exc
    return None


def _check_untouched(run_dir: str, judge_files: dict[str, bytes]) -> TamperingError | None:
    """The files that decide which tests run must be as the judge wrote them after the import."""
    changed = [name for name, data in judge_files.items()
               if not os.path.isfile(os.path.join(run_dir, name)) or Path(run_dir, name).read_bytes() != data]
    changed += [name for name in ("conftest.py",) if os.path.lexists(os.path.join(run_dir, name))]
    if not changed:
        return None
    return TamperingError(f"importing submission.py changed or created {', '.join(changed)} in the run directory, "
                          "so the tests were not run; the submission must not write these files.")


def _status_for_exception(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, SyntaxError):
        return "syntax_error"
    if isinstance(exc, ImportError):
        return "import_error"
    if isinstance(exc, MemoryError):
        return "memory_limit"
    return "error"


def _purge(run_dir: str) -> None:
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name in (_SUBMISSION, _TEST) or (path and os.path.abspath(path).startswith(run_dir + os.sep)):
            del sys.modules[name]
    while run_dir in sys.path:
        sys.path.remove(run_dir)


# pytest rewrites the test file's assertions on every import, which for a long test file costs more than
# running its tests; its own pyc cache cannot help, as every run has a fresh directory. So the rewritten code
# is kept by the sha256 of the test file (in memory, and in ``rewrite_cache`` when given) and written where
# pytest looks for its pyc, before the submission is imported (nothing the submission does can shape it).
_REWRITTEN: dict[str, bytes] = {}


def _place_rewritten_test(test_path: str, rewrite_cache: str | None) -> str | None:
    """Write pytest's pyc of the rewritten ``test_path``; returns its path relative to the run directory, or
    None when pytest's internals are not as expected (then pytest rewrites the file itself)."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, get_cache_dir, rewrite_asserts
    except ImportError:
        return None
    source = Path(test_path).read_bytes()
    key = hashlib.sha256(source + PYC_TAIL.encode() + importlib.util.MAGIC_NUMBER).hexdigest()
    stored = Path(rewrite_cache, key + ".code") if rewrite_cache else None
    data = _REWRITTEN.get(key)
    if data is None and stored is not None and stored.is_file():
        data = stored.read_bytes()
    if data is None:
        import ast

        tree = ast.parse(source, filename=test_path)
        rewrite_asserts(tree, source, test_path, None)
        data = marshal.dumps(compile(tree, test_path, "exec", dont_inherit=True))
        if stored is not None:
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.with_suffix(f".{os.getpid()}").write_bytes(data)
            os.replace(stored.with_suffix(f".{os.getpid()}"), stored)
    _REWRITTEN[key] = data
    code = _renamed(marshal.loads(data), test_path)   # tracebacks name this run's file
    stat = os.stat(test_path)
    pyc = get_cache_dir(Path(test_path)) / (Path(test_path).name[:-3] + PYC_TAIL)
    pyc.parent.mkdir(parents=True, exist_ok=True)
    pyc.write_bytes(importlib.util.MAGIC_NUMBER + b"\0\0\0\0" + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                    + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code))
    return str(pyc)


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def run_tests(test_file: str | os.PathLike, submission_file: str | os.PathLike,
              workdir: str | os.PathLike, rewrite_cache: str | None = None) -> dict:
    """Run ``test_file`` against ``submission_file`` in a fresh directory under ``workdir`` (the test file's
    rewritten assertions kept in ``rewrite_cache``, a folder, across processes).

    Returns the verdict described at the top of this module. Never raises for anything the
    submission does (short of killing the interpreter); a missing input file raises FileNotFoundError.
    """
    started = time.perf_counter()
    for path in (test_file, submission_file):
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such file: {path}")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    run_dir = os.path.realpath(tempfile.mkdtemp(prefix="run-", dir=workdir))
    shutil.copyfile(test_file, os.path.join(run_dir, _TEST + ".py"))
    shutil.copyfile(submission_file, os.path.join(run_dir, _SUBMISSION + ".py"))
    Path(run_dir, "pytest.ini").write_text(_PYTEST_INI)
    judge_names = [_TEST + ".py", "pytest.ini"]
    try:
        pyc = _place_rewritten_test(os.path.join(run_dir, _TEST + ".py"), rewrite_cache)
    except Exception:   # noqa: BLE001 - only a shortcut: pytest rewrites (and reports a syntax error) itself
        pyc = None
    if pyc is not None and pyc.startswith(run_dir + os.sep):
        judge_names.append(os.path.relpath(pyc, run_dir))
    judge_files = {name: Path(run_dir, name).read_bytes() for name in judge_names}

    sink = _CappedBytes(OUTPUT_LIMIT)
    stream = io.TextIOWrapper(sink, encoding="utf-8", errors="backslashreplace", write_through=True)
    collector = _Collector(run_dir, sink, stream)
    pytest_log = io.StringIO()   # pytest's own reporting; shown only when pytest itself fails
    saved_cwd, saved_out, saved_err, saved_bytecode = os.getcwd(), sys.stdout, sys.stderr, sys.dont_write_bytecode
    saved_in = sys.stdin
    # The browser runs every judgement in one long-lived interpreter: what a submission changes in the
    # process-wide state restored here must not carry over into the next run (the CLI's child is fresh).
    saved_environ, saved_path, saved_recursion = dict(os.environ), list(sys.path), sys.getrecursionlimit()
    _purge(run_dir)
    sys.path.insert(0, run_dir)
    sys.dont_write_bytecode = True
    exit_code, problem = None, None
    try:
        os.chdir(run_dir)
        sys.stdout = sys.stderr = stream
        sys.stdin = io.StringIO("")   # input() raises EOFError here and in Pyodide alike
        problem = _import_submission()
        if problem is None:
            problem = _check_untouched(run_dir, judge_files)
        if problem is None:
            sys.stdout = sys.stderr = pytest_log
            for key in _PYTEST_ENV:   # the same options and plugins everywhere, whatever was set
                os.environ.pop(key, None)
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            exit_code = pytest.main([os.path.join(run_dir, _TEST + ".py"), "-c",
                                     os.path.join(run_dir, "pytest.ini"), "--rootdir", run_dir,
                                     *_PYTEST_ARGS], plugins=[collector])
    except BaseException as exc:  # noqa: BLE001 - pytest.main rarely raises; keep the verdict
        problem = exc
    finally:
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
        os.chdir(saved_cwd)
        sys.stdout, sys.stderr, sys.dont_write_bytecode = saved_out, saved_err, saved_bytecode
        sys.stdin = saved_in
        if dict(os.environ) != saved_environ:
            os.environ.clear()
            os.environ.update(saved_environ)
        sys.path[:] = saved_path
        sys.setrecursionlimit(saved_recursion)
        _purge(run_dir)
    try:
        where = "submission.py (import)" if problem is not None else "test.py (collection)"
        verdict = _verdict(collector, problem or collector.collect_error, where, exit_code, pytest_log.getvalue())
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    verdict["duration"] = round(time.perf_counter() - started, 4)
    return verdict


def _verdict(collector: _Collector, problem: BaseException | None, where: str, exit_code,
             pytest_log: str) -> dict:
    tests, sink = collector.tests, collector.sink
    counts = {k: sum(t["outcome"] == k for t in tests) for k in ("passed", "failed", "error", "skipped")}
    counts["total"] = len(tests)
    verdict = {"schema": SCHEMA_VERSION, "status": "", "message": "", "details": "", "tests": tests,
               "counts": counts, "output": _clip(sink.text_outside(collector.spans)),
               "output_truncated": sink.total > sink.limit, "duration": 0.0}
    if problem is not None:
        verdict["message"] = f"{_describe(problem)}  [{where}]"
        if isinstance(problem, SyntaxError) and problem.lineno:
            verdict["details"] = f"{os.path.basename(problem.filename or '')}:{problem.lineno}\n    {(problem.text or '').rstrip()}"
        else:
            verdict["details"] = _clip(_frames(problem.__traceback__, collector.run_dir))

    if collector.interrupted or isinstance(problem, KeyboardInterrupt):
        status = "interrupted"
    elif verdict["output_truncated"]:
        status = "output_limit"
    elif collector.memory or isinstance(problem, MemoryError):
        status = "memory_limit"
    elif problem is not None:
        status = _status_for_exception(problem)
    elif exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        status, verdict["message"] = "error", _clip(f"pytest stopped (exit code {int(exit_code)}):\n{pytest_log[-3000:]}")
    elif counts["error"]:
        status = "error"
    elif counts["failed"]:
        status = "wrong_answer"
    elif counts["passed"]:
        status = "accepted"
    else:
        status = "no_tests"
    verdict["status"] = status
    prefix = collector.run_dir + os.sep   # keep temporary paths out of what the learner reads
    for item in (verdict, *tests):
        for key in ("message", "details"):
            item[key] = item[key].replace(prefix, "")
    return verdict
