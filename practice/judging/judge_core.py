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
         "compare": dict | None,          # a failed comparison's whole values, see _compare_data
         "case": str,                     # failed/error: the case that failed, "" otherwise, see below
         "raised_in": str},               # error: "yours" (submission.py or a file beside it), "test"
      ],                                  #   (test.py's own line), "library" (one the test called), ""
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
imported here). A comparison that held (the assert failed through ``not``, ``and`` or ``or``)
leaves none; a subset or superset check (``<=``/``>=`` of sets) names the elements that break it;
two long lists, tuples or dicts compared with ``==`` also say where they first differ (``first``:
the index path and both values there; ``item``: the top-level element that differs, when the whole
values are long, so a step-by-step history says which step first differs).

The failing case (``case``): how to rebuild the inputs of a failed test, so that the learner can call
their function on them. It lists a parametrized test's parameters (``seed = 3``) and then, by
convention, the test's ``repro`` local (the innermost test.py frame that has one, read after the
failure): a dict of name -> value, shown as ``name = value`` lines that paste into Python (a small
tensor as ``torch.tensor([...], dtype=...)``), a string shown as it is (a one-line recipe for
inputs too large to print, e.g. ``g = torch.Generator().manual_seed(3); x = torch.randn(4, 8, generator=g)``),
or a list of such lines (the calls a stateful test has made so far, appended as it makes them).
See practice/judging/exercises.py for the convention exercise tests follow.

Frames: the details list the frames in test.py and submission.py and in the learner's other files
(files whose real path lies in the folder of the file submitted, e.g. a project installed by a test
harness as links to its files; not installed packages), innermost last, and for an exception raised
inside a library, the frame that raised it (``torch/functional.py:12 in f``, relative to its
sys.path entry). Standard input is empty: ``input()`` raises EOFError in the CLI and in the browser.

Precedence when several apply: interrupted, output_limit, memory_limit, then the per-test result.

Limits of the guard: the submission runs in the same interpreter as pytest and this module, so code
written to subvert the judge (patching this module, pytest or the collector in memory) can always
forge a verdict; no in-process grader can prevent that. What is closed: every accident (exits,
crashes, output floods, KeyboardInterrupt) and the cheap tricks: pytest.skip()/xfail() from code,
rewriting test.py/pytest.ini or adding conftest.py at import time, PYTEST_ADDOPTS/PYTEST_PLUGINS.
The CLI also checks that the verdict it reads is consistent with the test file (practice/judge.py).
"""
from __future__ import annotations

import functools
import hashlib
import io
import linecache
import marshal
import operator
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
from _pytest.assertion import rewrite

SCHEMA_VERSION = 2
STATUSES = ("accepted", "wrong_answer", "error", "syntax_error", "import_error",
            "memory_limit", "output_limit", "no_tests", "interrupted")
OUTPUT_LIMIT = 1 << 20      # bytes printed per run before the rest is dropped (output_limit)
TEXT_LIMIT = 8000           # characters kept per message/details/stdout field
COMPARE_LIMIT = 4000        # characters kept of each value of a failed comparison
TENSOR_LITERAL_LIMIT = 256  # elements of a tensor in a failing case printed as torch.tensor([...])
LONG_VALUE = 15             # lines of a compared value above which the first differing element is shown
_JUDGE_DIR = os.path.dirname(os.path.abspath(__file__))
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


_PREFIXES = tuple(os.path.join(p, "") for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})


def _realpath(path: str) -> str:
    """os.path.realpath; remembered for files under Python's own prefixes (pytest, pluggy, the standard library:
    a failing run asks for every frame of every test), never for others (a project's links may change)."""
    return _installed_realpath(path) if path.startswith(_PREFIXES) else os.path.realpath(path)


@functools.lru_cache(maxsize=4096)
def _installed_realpath(path: str) -> str:
    return os.path.realpath(path)


def _owner(filename: str, run_dir: str, learner_dir: str) -> str:
    """Whose file a frame is in: "test", "submission", "learner" (beside the submitted file) or "library"."""
    if filename.startswith("<"):   # <frozen importlib._bootstrap>, <string>: never the learner's
        return "library"
    path = os.path.abspath(filename)
    for owner in (_TEST, _SUBMISSION):
        if path == os.path.join(run_dir, owner + ".py"):
            return owner
    real = _realpath(path)
    parts = real.split(os.sep)
    if learner_dir and real.startswith(learner_dir + os.sep) and "site-packages" not in parts \
            and "dist-packages" not in parts and not real.startswith(_JUDGE_DIR + os.sep):
        return "learner"
    return "library"


def _library_path(filename: str) -> str:
    """A library file relative to the sys.path entry it was imported from (no machine's paths)."""
    path = os.path.abspath(filename)
    roots = [os.path.abspath(p) for p in sys.path if p and path.startswith(os.path.abspath(p) + os.sep)]
    return os.path.relpath(path, max(roots, key=len)) if roots else os.path.basename(path)


def _tb_frames(excinfo_tb) -> list[tuple[str, int, str]]:
    """``(filename, line number, function name)`` of each frame of a traceback, outermost first. Cheaper than
    ``traceback.extract_tb``, which also reads every frame's source and column positions."""
    return [(frame.f_code.co_filename, lineno, frame.f_code.co_name) for frame, lineno in traceback.walk_tb(excinfo_tb)]


def _frames(excinfo_tb, run_dir: str, learner_dir: str = "", library: bool = False) -> str:
    """The traceback frames in test.py, submission.py and the learner's other files, with their source;
    with ``library``, also the innermost frame when a library raised."""
    entries: list[list] = []   # [text, repeats]; identical consecutive frames (recursion) folded
    frames = _tb_frames(excinfo_tb)
    for i, (filename, lineno, function) in enumerate(frames):
        owner = _owner(filename, run_dir, learner_dir)
        if owner == "library" and not (library and i == len(frames) - 1 and os.path.isfile(filename)):
            continue
        name = os.path.basename(filename) if owner in ("test", "submission") else \
            os.path.realpath(filename) if owner == "learner" else _library_path(filename)
        line = linecache.getline(filename, lineno).strip()
        text = f"{name}:{lineno} in {function}" + (f"\n    {line}" if line else "")
        if entries and entries[-1][0] == text:
            entries[-1][1] += 1
        else:
            entries.append([text, 0])
    lines = [text + (f"\n    [the frame above repeated {n} more times]" if n else "") for text, n in entries]
    return "\n".join(lines[-20:])


def _raised_in(excinfo_tb, run_dir: str, learner_dir: str) -> str:
    """ "yours", "test" or "library" (see the verdict schema); "" without frames of this run."""
    owners = [_owner(filename, run_dir, learner_dir) for filename, _, _ in _tb_frames(excinfo_tb)]
    own = [o for o in owners if o != "library"]
    if not own:
        return ""
    if own[-1] != "test":
        return "yours"
    return "test" if owners[-1] == "test" else "library"


def _literal(value) -> str:
    """``value`` as Python source that rebuilds it, where it can: small tensors as torch.tensor(...)."""
    if _is_tensor(value):
        dtype = str(value.dtype)
        if value.numel() <= TENSOR_LITERAL_LIMIT:
            return f"torch.tensor({value.detach().cpu().tolist()!r}, dtype={dtype})"
        return f"<tensor of shape {tuple(value.shape)}, {dtype}: too large to print, rebuild it from the seed>"
    try:   # as built: a dict's order may be what the case is about
        text = pprint.pformat(value, width=88, compact=True, sort_dicts=False)
    except Exception:  # noqa: BLE001 - a broken __repr__ in the submission
        return _shown(value)
    return _clip(text, COMPARE_LIMIT)


def _case(item, excinfo_tb, run_dir: str) -> str:
    """The failing case: a parametrized test's parameters, then the test's ``repro`` (module docstring)."""
    lines = []
    params = getattr(getattr(item, "callspec", None), "params", None) or {}
    for name, value in params.items():
        lines.append(f"{name} = {_literal(value)}")
    repro = None
    for frame, _ in traceback.walk_tb(excinfo_tb):
        if os.path.abspath(frame.f_code.co_filename) == os.path.join(run_dir, _TEST + ".py") \
                and "repro" in frame.f_locals:
            repro = frame.f_locals["repro"]   # the innermost one wins
    if isinstance(repro, dict):
        for name, value in repro.items():
            line = f"{name} = {_literal(value)}"
            if line not in lines:
                lines.append(line.replace("\n", "\n" + " " * (len(str(name)) + 3)))
    elif isinstance(repro, (list, tuple)) and all(isinstance(line, str) for line in repro):
        lines.extend(repro)   # lines of code, e.g. the calls a stateful test made so far
    elif repro is not None:
        lines.append(str(repro))
    return _clip("\n".join(lines), COMPARE_LIMIT)


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


_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge, "is": operator.is_, "is not": operator.is_not,
        "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}


def _held(op: str, left, right) -> bool:
    try:
        return bool(_OPS[op](left, right))
    except Exception:  # noqa: BLE001 - e.g. an elementwise tensor comparison: it did not hold
        return False


def _index_path(path: tuple) -> str:
    return "".join(f"[{p!r}]" for p in path)


def _first_difference(actual, expected, path=()):
    """(index path, actual there, expected there) of the first place two nested lists/tuples/dicts
    differ: an element that differs, or the container whose length or keys do; None if not found."""
    try:
        if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
            for i, (a, e) in enumerate(zip(actual, expected)):
                if a != e:
                    return _first_difference(a, e, path + (i,)) or (path + (i,), a, e)
            return (path, actual, expected) if len(actual) != len(expected) else None
        if isinstance(actual, dict) and isinstance(expected, dict):
            if actual.keys() != expected.keys():
                return path, actual, expected
            for key in expected:
                if actual[key] != expected[key]:
                    return _first_difference(actual[key], expected[key], path + (key,)) \
                        or (path + (key,), actual[key], expected[key])
    except Exception:  # noqa: BLE001 - elements that cannot be compared plainly
        return None
    return None


def _compare_data(op: str, left, right) -> dict | None:
    """What a failed ``left <op> right`` shows: both values whole (clipped), or tensor summaries; None
    when the comparison held (the assert failed elsewhere: ``not``, ``and``, ``or``)."""
    if _is_tensor(left) and _is_tensor(right):
        return {**_tensor_compare(left, right), "op": op}
    if _held(op, left, right):
        return None
    kind = "text" if isinstance(left, str) and isinstance(right, str) else "values"
    if kind == "text":
        return {"kind": kind, "op": op, "left": _clip(left, COMPARE_LIMIT), "right": _clip(right, COMPARE_LIMIT)}
    data = {"kind": kind, "op": op, "left": _shown(left), "right": _shown(right)}
    sets = isinstance(left, (set, frozenset, type({}.keys()))) and isinstance(right, (set, frozenset, type({}.keys())))
    if sets and op in ("<=", "<", ">=", ">"):
        extra = set(left) - set(right) if op in ("<=", "<") else set(right) - set(left)
        data["breaking"] = _shown(sorted(extra, key=repr))   # elements of the subset side not in the other
    elif op == "==" and (first := _first_difference(left, right)):
        path, actual, expected = first
        sequences = isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple))
        data["first"] = {"path": _index_path(path), "actual": _shown(actual), "expected": _shown(expected),
                         "lengths": [len(actual), len(expected)] if sequences else None,
                         "keys": isinstance(actual, dict) and isinstance(expected, dict)}
        if path and max(data["left"].count("\n"), data["right"].count("\n")) >= LONG_VALUE:
            data["item"] = {"path": _index_path(path[:1]), "actual": _shown(left[path[0]]),
                            "expected": _shown(right[path[0]]), "count": [len(left), len(right)]}
    return data


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

    def __init__(self, run_dir: str, sink: _CappedBytes, stream: io.TextIOWrapper, learner_dir: str = "",
                 on_test_start=None) -> None:
        self.run_dir, self.sink, self.stream = run_dir, sink, stream
        self.learner_dir, self.on_test_start = learner_dir, on_test_start
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
                        "stdout": "", "duration": 0.0, "compare": None, "case": "", "raised_in": ""}
        self.compared = None
        if self.on_test_start is not None:
            self.on_test_start(item.name)   # a crash that kills the process still knows which test ran
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
        # pytest's own rendering of a failure (its "longrepr": every frame with source) is never shown; the
        # verdict is built below. The exception's one line is report enough, and a failing run is judged faster.
        item.repr_failure = item._repr_failure_py = _exception_line
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
        test["details"] = _clip(_frames(call.excinfo.tb, self.run_dir, self.learner_dir, library=not failed))
        try:
            test["case"] = _case(item, call.excinfo.tb, self.run_dir)
            if not failed:
                test["raised_in"] = _raised_in(call.excinfo.tb, self.run_dir, self.learner_dir)
        except Exception:  # noqa: BLE001 - a repro whose repr fails: the rest of the report stands
            pass
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


def _exception_line(excinfo, style=None) -> str:
    """Stands in for pytest's rendering of a failed test (Item.repr_failure / _repr_failure_py)."""
    return excinfo.exconly()


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


# pytest rewrites a test file's assertions every time it imports it, which for a long test file costs more than
# running its tests, and its own pyc cache cannot help: every run has a fresh directory. The rewritten code
# depends only on the file's bytes (the pytest.ini run_tests writes is always the same), so it is kept per
# bytes: in memory, for the browser's interpreter that serves many runs, and, given ``rewrite_cache``, in that
# folder for the CLI's fresh children. run_tests fills it before the submission is imported, so nothing the
# submission does can shape what is stored; while pytest runs, its rewriter is this cache.
REWRITTEN_KEPT = 8   # test files whose rewritten code is kept in memory
_REWRITTEN: dict[bytes, types.CodeType] = {}
_rewrite_test = rewrite._rewrite_test   # pytest's own


def rewritten(test_path: Path, rewrite_cache: str | None = None) -> types.CodeType:
    """pytest's rewriting of the test file at ``test_path``, from the cache when its bytes were rewritten
    before, with ``test_path`` as the file name of every code object (tracebacks point at this run's file).
    Without a config pytest's rewriter differs only in never adding the assertion-pass hook, which the
    judge's pytest.ini does not enable."""
    if "enable_assertion_pass_hook" in _PYTEST_INI:
        raise RuntimeError("the judge's pytest.ini enables the assertion-pass hook; rewrite per run")
    source = Path(test_path).read_bytes()
    code = _REWRITTEN.get(source)
    stored = Path(rewrite_cache, hashlib.sha256(source + _REWRITE_TAG).hexdigest() + ".code") if rewrite_cache else None
    if code is None and stored is not None and stored.is_file():
        try:
            code = marshal.loads(stored.read_bytes())
        except (ValueError, EOFError, TypeError):   # not what this Python wrote: rewrite below
            code = None
    if code is None:
        code = _rewrite_test(Path(test_path), None)[1]
        if stored is not None:
            stored.parent.mkdir(parents=True, exist_ok=True)
            partial = stored.with_suffix(f".{os.getpid()}")
            partial.write_bytes(marshal.dumps(code))
            os.replace(partial, stored)
    remember(source, code)
    return _renamed(code, str(test_path))


def remember(source: bytes, code: types.CodeType) -> None:
    """Keep ``code`` as the rewritten code of a test file with these bytes (the oldest beyond REWRITTEN_KEPT go)."""
    _REWRITTEN.pop(source, None)
    while len(_REWRITTEN) >= REWRITTEN_KEPT:
        del _REWRITTEN[next(iter(_REWRITTEN))]
    _REWRITTEN[source] = code


_REWRITE_TAG = f"{sys.implementation.cache_tag} pytest {pytest.__version__}".encode()


def _cached_rewrite_test(fn: Path, config) -> tuple[os.stat_result, types.CodeType]:
    """Stands in for pytest's ``_rewrite_test`` while run_tests runs pytest (never writes to disk)."""
    return os.stat(fn), rewritten(fn)


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and the code objects nested in it, with ``co_filename`` set to ``filename``."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def run_tests(test_file: str | os.PathLike, submission_file: str | os.PathLike,
              workdir: str | os.PathLike, rewrite_cache: str | None = None, on_test_start=None) -> dict:
    """Run ``test_file`` against ``submission_file`` in a fresh directory under ``workdir`` (the test file's
    rewritten assertions kept in ``rewrite_cache``, a folder, across processes).

    Returns the verdict described at the top of this module. Never raises for anything the
    submission does (short of killing the interpreter); a missing input file raises FileNotFoundError.
    ``on_test_start(name)``, when given, is called as each test starts (the CLI's child reports it, so
    that a crash that kills the process can still say which test was running).
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
    judge_files = {name: Path(run_dir, name).read_bytes() for name in (_TEST + ".py", "pytest.ini")}
    try:
        rewritten(Path(run_dir, _TEST + ".py"), rewrite_cache)   # before the submission runs
    except Exception:  # noqa: BLE001 - e.g. a SyntaxError: pytest reports it when it collects the file
        pass

    sink = _CappedBytes(OUTPUT_LIMIT)
    stream = io.TextIOWrapper(sink, encoding="utf-8", errors="backslashreplace", write_through=True)
    learner_dir = os.path.dirname(os.path.realpath(submission_file))
    collector = _Collector(run_dir, sink, stream, learner_dir, on_test_start)
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
            saved_rewrite, rewrite._rewrite_test = rewrite._rewrite_test, _cached_rewrite_test
            try:
                exit_code = pytest.main([os.path.join(run_dir, _TEST + ".py"), "-c",
                                         os.path.join(run_dir, "pytest.ini"), "--rootdir", run_dir,
                                         *_PYTEST_ARGS], plugins=[collector])
            finally:
                rewrite._rewrite_test = saved_rewrite
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
            verdict["details"] = _clip(_frames(problem.__traceback__, collector.run_dir, collector.learner_dir,
                                               library=not isinstance(problem, AssertionError)))

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
