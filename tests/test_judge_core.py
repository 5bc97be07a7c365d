"""judge_core.run_tests in-process: the function the CLI's child and the browser worker both call."""
from __future__ import annotations

import ast
import json
import os
import sys

import pytest

from test_judge import PRACTICE, SOLUTION, STARTER, TEST

from judging import judge_core  # noqa: E402  (practice/ is on sys.path via test_judge)


@pytest.fixture
def run(tmp_path):
    """run(submission_source, test_source=TEST) -> verdict, through judge_core.run_tests."""
    def go(source: str, test: str = TEST) -> dict:
        (tmp_path / "t.py").write_text(test, encoding="utf-8")
        (tmp_path / "s.py").write_text(source, encoding="utf-8")
        verdict = judge_core.run_tests(tmp_path / "t.py", tmp_path / "s.py", tmp_path / "work")
        json.dumps(verdict)
        return verdict
    return go


def test_schema_and_accepted(run):
    verdict = run(SOLUTION)
    assert set(verdict) == {"schema", "status", "message", "details", "tests", "counts", "output",
                            "output_truncated", "duration"}
    assert verdict["status"] == "accepted" and verdict["schema"] == judge_core.SCHEMA_VERSION
    assert verdict["counts"] == {"passed": 2, "failed": 0, "error": 0, "skipped": 0, "total": 2}
    assert [set(t) for t in verdict["tests"]] == [{"name", "outcome", "message", "details", "stdout", "duration",
                                                   "compare", "case", "raised_in"}] * 2
    assert verdict["status"] in judge_core.STATUSES


def test_failed_assertion_shows_the_values(run):
    verdict = run("def double(x):\n    return x + 2\n")
    assert verdict["status"] == "wrong_answer"
    example, many = verdict["tests"]
    assert example["outcome"] == "passed" and many["outcome"] == "failed"
    assert "assert -3 == (2 * -5)" in many["message"] and "where -3 = double(-5)" in many["message"]
    assert many["details"].startswith("test.py:10 in test_many")


def test_only_the_test_file_gets_assertion_rewriting(run):
    """Modules the tests import (torch's, in real exercises) load normally: rewriting them is slow."""
    test = ("import sys\n\n"
            "def test_library_module_is_not_rewritten():\n"
            "    sys.modules.pop('colorsys', None)\n"
            "    import colorsys\n"
            "    assert type(colorsys.__loader__).__name__ != 'AssertionRewritingHook'\n")
    assert run(SOLUTION, test)["status"] == "accepted"


def test_missing_expected_exception_is_a_wrong_answer(run):
    test = TEST + "\nimport pytest\n\ndef test_rejects_strings():\n    with pytest.raises(TypeError):\n        double(None)\n"
    verdict = run("def double(x):\n    return 2 * (x or 0)\n", test)
    assert verdict["status"] == "wrong_answer"
    assert verdict["tests"][-1]["outcome"] == "failed" and "DID NOT RAISE" in verdict["tests"][-1]["message"]


def test_exception_in_the_submission_is_an_error_with_its_line(run):
    verdict = run(STARTER)
    assert verdict["status"] == "error" and verdict["counts"]["error"] == 2
    assert verdict["tests"][0]["message"] == "NotImplementedError: TODO"
    assert "submission.py:3 in double" in verdict["tests"][0]["details"]


def test_printed_output_is_kept_per_test_and_outside_tests(run):
    source = 'import sys\nprint("loading")\ndef double(x):\n    print("got", x)\n    print("warn", file=sys.stderr)\n    return 2 * x\n'
    verdict = run(source)
    assert verdict["status"] == "accepted"
    assert verdict["output"] == "loading\n"
    assert verdict["tests"][0]["stdout"] == "got 2\nwarn\n"
    assert verdict["tests"][1]["stdout"].count("got") == 11


@pytest.mark.parametrize("source, status, needle", [
    ("def double(x) return 2 * x\n", "syntax_error", "submission.py:1"),
    ("def double(x):\nreturn 2 * x\n", "syntax_error", "submission.py:2"),
    ("import no_such_module_xyz\n", "import_error", "No module named 'no_such_module_xyz'"),
    ("def triple(x):\n    return 3 * x\n", "import_error", "cannot import name 'double'"),
    ("import sys\nsys.exit(0)\n", "error", "SystemExit"),
    ("raise MemoryError\n", "memory_limit", "MemoryError"),
])
def test_problems_before_any_test_runs(run, source, status, needle):
    verdict = run(source)
    assert verdict["status"] == status and verdict["tests"] == []
    assert needle in verdict["message"] + verdict["details"]
    assert "run-" not in verdict["message"]   # temporary paths are not shown


def test_system_exit_inside_a_test_fails_that_test(run):
    verdict = run("import sys\ndef double(x):\n    sys.exit(0)\n")
    assert verdict["status"] == "error"
    assert [t["outcome"] for t in verdict["tests"]] == ["error", "error"]
    assert verdict["tests"][0]["message"] == "SystemExit: 0"


def test_memory_error_output_limit_and_interrupt(run):
    assert run("def double(x):\n    raise MemoryError\n")["status"] == "memory_limit"
    flood = f"def double(x):\n    print('z' * {judge_core.OUTPUT_LIMIT // 2})\n    return 2 * x\n"
    verdict = run(flood)
    assert verdict["status"] == "output_limit" and verdict["output_truncated"]
    assert verdict["counts"]["passed"] == 2   # the tests themselves passed; the flood is the verdict
    verdict = run("def double(x):\n    raise KeyboardInterrupt\n")
    assert verdict["status"] == "interrupted" and verdict["counts"]["passed"] == 0


def test_no_tests_and_skips(run):
    assert run(SOLUTION, "from submission import double\n")["status"] == "no_tests"
    skipping = TEST + "\nimport pytest\n\n@pytest.mark.skip(reason='later')\ndef test_skipped():\n    pass\n"
    verdict = run(SOLUTION, skipping)
    assert verdict["status"] == "accepted" and verdict["counts"]["skipped"] == 1


@pytest.mark.parametrize("call", ["pytest.skip('later')", "pytest.xfail('later')"])
def test_skip_called_by_the_submission_is_not_a_pass(run, call):
    # Hard-code the example, dodge the rest: a skip that no marker in test.py declared is an error.
    source = f"import pytest\ndef double(x):\n    if x != 2:\n        {call}\n    return 4\n"
    verdict = run(source)
    assert verdict["status"] == "error" and verdict["counts"]["passed"] == 1, verdict
    assert "pytest.skip()/pytest.xfail()" in verdict["tests"][1]["message"]


@pytest.mark.parametrize("attack", [
    'open("test.py", "w").write("def test_ok():\\n    pass\\n")',
    'open("pytest.ini", "a").write("addopts = -k test_example\\n")',
    'open("conftest.py", "w").write("import pytest\\n@pytest.hookimpl(hookwrapper=True)\\n'
    'def pytest_pyfunc_call(pyfuncitem):\\n    (yield).force_result(True)\\n")',
])
def test_rewriting_the_judges_files_at_import_is_not_a_pass(run, attack):
    verdict = run(attack + "\ndef double(x):\n    return 4\n")
    assert verdict["status"] == "error" and "TamperingError" in verdict["message"], verdict
    assert verdict["counts"]["total"] == 0


def test_pytest_options_from_the_environment_are_ignored_and_restored(run, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k test_example")
    assert run("def double(x):\n    return 4\n")["status"] == "wrong_answer"   # test_many still ran
    verdict = run("import os\nos.environ['PYTEST_ADDOPTS'] = '-k test_example'\ndef double(x):\n    return 4\n")
    assert verdict["status"] == "wrong_answer"
    assert os.environ["PYTEST_ADDOPTS"] == "-k test_example"


def test_broken_test_file_is_an_error_not_a_pass(run):
    verdict = run(SOLUTION, "from submission import double\nraise RuntimeError('broken test file')\n")
    assert verdict["status"] == "error" and "broken test file" in verdict["message"]


def test_runs_leave_no_trace_and_do_not_leak_into_each_other(run, tmp_path):
    cwd, stdout, path = os.getcwd(), sys.stdout, list(sys.path)
    source = 'open("scratch.txt", "w").write("x")\ndef double(x):\n    return 2 * x\n'
    assert run(source)["status"] == "accepted"
    assert run("def double(x):\n    return x\n")["status"] == "wrong_answer"   # a fresh import each time
    assert run(SOLUTION)["status"] == "accepted"
    assert (os.getcwd(), sys.stdout, sys.path) == (cwd, stdout, path)
    assert "submission" not in sys.modules
    assert "run-" not in (getattr(sys.modules.get("test"), "__file__", None) or "")
    assert list((tmp_path / "work").iterdir()) == []   # run directories, scratch files, no __pycache__
    assert not (tmp_path / "scratch.txt").exists()


def test_process_state_changed_by_a_submission_does_not_reach_the_next_run(run):
    # The browser judges every run in one interpreter; each must start as the CLI's fresh child does.
    source = ("import os, sys\nos.environ['MINI_JUDGE_LEAK'] = '1'\nsys.path.append('/nowhere')\n"
              "sys.setrecursionlimit(4321)\ndef double(x):\n    return 2 * x\n")
    path, limit = list(sys.path), sys.getrecursionlimit()
    assert run(source)["status"] == "accepted"
    assert "MINI_JUDGE_LEAK" not in os.environ and sys.path == path and sys.getrecursionlimit() == limit
    probe = "import os\ndef double(x):\n    return 2 * x if 'MINI_JUDGE_LEAK' not in os.environ else x\n"
    assert run(probe)["status"] == "accepted"


def test_missing_input_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        judge_core.run_tests(tmp_path / "nope.py", tmp_path / "nope.py", tmp_path)


def test_core_imports_only_the_standard_library_and_pytest():
    tree = ast.parse((PRACTICE / "judging" / "judge_core.py").read_text(encoding="utf-8"))
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert names - set(sys.stdlib_module_names) <= {"pytest", "_pytest"}   # _pytest: pytest's own package (its rewriter)
    assert "pytest" in names
    assert not names & {"subprocess", "signal", "threading", "resource", "multiprocessing"}   # Pyodide has none


# ---------------------------------------------------------------------------------------------
# What a failure shows: the case, the comparison, the frames


CASES = """\
import pytest
from submission import f


@pytest.mark.parametrize("seed", [1, 2])
def test_dict(seed):
    repro = {"items": [seed, seed + 1], "order": {"b": 1, "a": 2}}
    assert f(repro["items"]) == seed


def test_lines():
    repro = ["from contextlib import suppress", "x = f([1])"]
    repro.append("f([2])")
    assert f([2]) == 0


def test_recipe():
    repro = "g = make(3); f(g)"
    f(None)
"""


def test_the_failing_case_lists_parameters_then_the_tests_repro(run):
    verdict = run("def f(items):\n    return len(items)\n", CASES)
    cases = {t["name"]: t["case"] for t in verdict["tests"]}
    assert cases["test_dict[1]"] == "seed = 1\nitems = [1, 2]\norder = {'b': 1, 'a': 2}"   # as built, not sorted
    assert cases["test_lines"] == "from contextlib import suppress\nx = f([1])\nf([2])"
    assert cases["test_recipe"] == "g = make(3); f(g)"   # an exception in the learner's code shows it too
    assert [t["raised_in"] for t in verdict["tests"]] == ["", "", "", "yours"]
    assert run("def f(items):\n    return 1\n", CASES)["tests"][0]["case"] == ""   # passed: nothing


OPS = """\
from submission import f


def test_subset():
    assert set(f()) <= {1, 2, 3}


def test_positive():
    assert len(f()) - 4 > 0


def test_not():
    assert not (f() == [1, 2, 4])


def test_history():
    steps = [[i] * 12 for i in range(40)]
    got = [list(s) for s in steps]
    got[7][11] = -1
    assert got == steps
"""


def test_comparisons_keep_their_operator_and_say_what_breaks_them(run):
    subset, positive, negated, history = (t["compare"] for t in run("def f():\n    return [1, 2, 4]\n", OPS)["tests"])
    assert subset["op"] == "<=" and subset["breaking"] == "[4]"
    assert positive == {"kind": "values", "op": ">", "left": "-1", "right": "0"}
    assert negated is None   # f() == [1, 2, 4] held: the assert failed through `not`
    assert history["first"]["path"] == "[7][11]" and (history["first"]["actual"], history["first"]["expected"]) == ("-1", "7")
    assert history["item"] == {"path": "[7]", "actual": repr([7] * 11 + [-1]), "expected": repr([7] * 12), "count": [40, 40]}


def test_frames_in_the_learners_other_files_and_the_library_that_raised(run, tmp_path):
    """A module beside the submitted file, installed elsewhere as a link (the capstone's harness does
    this), is shown by its real path; an exception from a library shows the frame that raised it."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "plugin.py").write_text("def load():\n    raise KeyError('lumen')\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "plugin.py").symlink_to(tmp_path / "project" / "plugin.py")
    test = (f"import json, sys\nsys.path.insert(0, {str(tmp_path / 'site')!r})\nimport plugin\n\n"
            "def test_plugin():\n    plugin.load()\n\n"
            "def test_library():\n    json.loads('{')\n")
    mine, library = run("PROJECT = 'project'\n", test)["tests"]
    assert f"{(tmp_path / 'project' / 'plugin.py').resolve()}:2 in load" in mine["details"]
    assert str(tmp_path / "site") not in mine["details"] and mine["raised_in"] == "yours"
    assert library["raised_in"] == "library" and "json/decoder.py:" in library["details"].splitlines()[-2]


def test_each_test_is_announced_before_it_runs(tmp_path):
    (tmp_path / "t.py").write_text(TEST, encoding="utf-8")
    (tmp_path / "s.py").write_text(SOLUTION, encoding="utf-8")
    started = []
    judge_core.run_tests(tmp_path / "t.py", tmp_path / "s.py", tmp_path / "work", on_test_start=started.append)
    assert started == ["test_example", "test_many"]
