"""practice/render.py: the one renderer of verdicts, shared by the CLI and the browser worker."""
from __future__ import annotations

import ast
import sys

from test_judge import PRACTICE  # noqa: F401  (puts practice/ on sys.path)

from judging import render  # noqa: E402


def case(name, outcome="passed", message="", details="", compare=None):
    return {"name": name, "outcome": outcome, "message": message, "details": details, "stdout": "",
            "duration": 0.0, "compare": compare}


def verdict(status, tests, **extra):
    counts = {k: sum(t["outcome"] == k for t in tests) for k in ("passed", "failed", "error", "skipped")}
    return {"schema": 2, "status": status, "message": "", "details": "", "tests": tests,
            "counts": {**counts, "total": len(tests)}, "output": "", "output_truncated": False, "duration": 0.1, **extra}


TODO = "submission.py:3 in f\n    raise NotImplementedError('f')"


def test_identical_errors_are_grouped_failures_first_passed_collapsed():
    tests = [case("test_ok")] + [case(f"test_{i}", "error", "NotImplementedError: f", TODO) for i in range(53)] \
        + [case("test_value", "failed", "AssertionError: assert 1 == 2", "test.py:9 in test_value")]
    model = render.view(verdict("error", tests))
    assert [(g["outcome"], len(g["names"]), g["kind"]) for g in model["groups"]] == [
        ("error", 53, "todo"), ("failed", 1, "assertion")]
    assert model["passed"] == ["test_ok"]
    text = render.text(model, "en")
    assert text.count("NotImplementedError: f") == 1 and "53 tests" in text and "[a TODO of the starter is not done yet" in text
    assert text.index("53 tests") < text.index("1 tests passed")
    assert "The starter's TODO is still there" in text
    zh = render.text(model, "zh")
    assert "53 个测试" in zh and "TODO 还没有完成" in zh and "结果：运行出错 (error)" in zh


def test_an_exception_inside_the_test_is_told_apart_from_one_in_the_learners_code():
    details = "test.py:5 in test_len\n    assert len(f()) == 3"
    model = render.view(verdict("error", [case("test_len", "error", "TypeError: object of type 'NoneType' has no len()", details)]))
    assert model["groups"][0]["kind"] == "test_exception"


def test_compared_values_are_shown_whole_with_a_diff():
    expected = "\n".join(f"line {i}" for i in range(30))
    compare = {"kind": "text", "op": "==", "left": expected.replace("line 22", "line twenty-two"), "right": expected}
    model = render.view(verdict("wrong_answer", [case("test_text", "failed", "AssertionError: assert 'li...' == 'li...'",
                                                      compare=compare)]))
    blocks = model["groups"][0]["compare"]["blocks"]
    assert [b["label"]["en"].split(" ")[0] for b in blocks] == ["Actual", "Expected", "Difference"]
    assert blocks[0]["text"] == compare["left"] and "-line 22\n+line twenty-two" in blocks[2]["text"]


def test_tensors_by_shape_dtype_and_first_difference():
    compare = {"kind": "tensor", "actual": {"shape": [3, 4], "dtype": "bfloat16", "device": "cpu"},
               "expected": {"shape": [3, 4], "dtype": "float32", "device": "cpu"}, "mismatched": 2, "total": 12,
               "index": [1, 2], "actual_value": "6.5", "expected_value": "6.0", "rtol": 1.3e-6, "atol": 1e-5}
    model = render.view(verdict("wrong_answer", [case("test_t", "failed", "AssertionError: Tensor-likes are not close!",
                                                      compare=compare)]))
    text = render.text(model, "en")
    assert "2 of 12 elements differ; the first at index (1, 2): actual 6.5, expected 6.0" in text
    assert "shape (3, 4), dtype bfloat16" in text and "dtype float32" in text


def test_input_and_limits_get_the_same_advice_everywhere():
    eof = render.view(verdict("error", [case("test_x", "error", "EOFError: EOF when reading a line", TODO)]))
    assert "input()" in eof["advice"][0]["en"] and "input()" in eof["advice"][0]["zh"]
    flood = render.view(verdict("output_limit", [case("test_x")], output_truncated=True))
    assert "Too much was printed" in flood["advice"][0]["en"]
    assert render.view(verdict("timeout", []))["title"] == {"zh": "超时", "en": "Time limit exceeded"}


def test_renderer_imports_only_the_standard_library():
    tree = ast.parse(open(render.__file__, encoding="utf-8").read())
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert names <= set(sys.stdlib_module_names) | {"__future__"}
