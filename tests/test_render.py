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


def labels(compare):
    model = render.view(verdict("wrong_answer", [case("test_x", "failed", "AssertionError: assert ...", "test.py:3 in test_x",
                                                      compare)]))
    view = model["groups"][0]["compare"]
    return [b["label"]["en"] for b in view["blocks"]], view["summary"]["en"] if view["summary"] else None


def test_a_comparison_is_labelled_by_what_it_checks():
    assert labels({"kind": "values", "op": "<=", "left": "{1, 4}", "right": "{1, 2}", "breaking": "[4]"}) == (
        ["The side that must be the subset (left of <=)", "The side that must contain it (right of <=)"],
        "subset check: these elements of the left are not in the right: [4]")
    blocks, summary = labels({"kind": "values", "op": ">", "left": "0", "right": "0"})
    assert blocks == ["Left of >", "Right of >"] and summary == "needs left > right, which does not hold"
    assert not any("Actual" in b or "Expected" in b for b in blocks)
    assert labels({"kind": "values", "op": "in", "left": "9", "right": "[1, 2]"})[0] == [
        "The item (left of in)", "The container (right of in)"]
    assert labels({"kind": "values", "op": "is", "left": "[1]", "right": "None"})[1] == "the left must be None itself"
    assert labels({"kind": "values", "op": "==", "left": "1", "right": "2"})[0][0].startswith("Actual (left of ==")


def test_a_long_history_shows_the_first_step_that_differs():
    compare = {"kind": "values", "op": "==", "left": "[...]\n" * 40, "right": "[...]\n" * 40,
               "first": {"path": "[3][1]", "actual": "61", "expected": "15", "lengths": None, "keys": False},
               "item": {"path": "[3]", "actual": "[3, 61]", "expected": "[3, 15]", "count": [9, 9]}}
    blocks, summary = labels(compare)
    assert summary == ("the first element that differs is [3] (of 9); "
                       "the first difference is at [3][1]: actual 61, expected 15")
    assert blocks == ["Actual [3] (the first element that differs)", "Expected [3]"]   # no whole values, no diff


def test_repeated_failures_collapse_to_the_first_with_its_case():
    tests = [case(f"test_random[{seed}]", "failed", f"AssertionError: assert {seed} == 0",
                  "test.py:12 in test_random\n    assert f(seed) == 0") for seed in range(10)]
    tests[0]["case"] = "seed = 0\nitems = [0, 1]"
    tests.append(case("test_other", "failed", "AssertionError: assert 1 == 0", "test.py:20 in test_other"))
    model = render.view(verdict("wrong_answer", tests))
    first, other = model["groups"]
    assert len(first["names"]) == 10 and len(other["names"]) == 1
    assert first["headline"] == "AssertionError: assert 0 == 0" and first["case"]["text"] == "seed = 0\nitems = [0, 1]"
    text = render.text(model, "en")
    assert "these 10 tests fail at the same place with different values; the first (test_random[0]) is shown" in text
    assert "The failing case (paste it into Python" in text and "        items = [0, 1]" in text
    assert text.count("assert 1 == 0") == 1 and text.count("assert 5 == 0") == 0


def test_the_tests_own_message_is_kept_whole_above_the_comparison():
    message = "AssertionError: the detector raised:\n  Traceback (most recent call last):\n  ValueError: x\nassert 1 == 0"
    compare = {"kind": "values", "op": "==", "left": "1", "right": "0"}
    model = render.view(verdict("wrong_answer", [case("test_detect", "failed", message, "test.py:3 in detect", compare)]))
    assert model["groups"][0]["headline"] == message
    assert "ValueError: x" in render.text(model, "en")


def test_todos_exceptions_and_library_errors_are_told_apart():
    kinds = [g["kind"] for g in render.view(verdict("error", [
        {**case("test_a", "error", "NotImplementedError: rms_norm", "test.py:3 in test_a"), "raised_in": "test"},
        {**case("test_b", "error", "KeyError: 'x'", "plugin.py:2 in load"), "raised_in": "yours"},
        {**case("test_c", "error", "ValueError: unknown kernel backend 'lumen'", "test.py:9 in test_c"), "raised_in": "library"},
        {**case("test_d", "error", "TypeError: 'NoneType' object is not subscriptable", "test.py:4 in test_d"),
         "raised_in": "test"}]))["groups"]]
    assert kinds == ["todo", "exception", "library", "test_exception"]


def test_a_crash_names_the_running_test_and_the_triton_interpreters_likely_cause():
    crashed = render.view(verdict("crashed", [], running="test_kernel[37-16]", triton_interpreter=True))
    advice = [a["en"] for a in crashed["advice"]]
    assert advice[0] == "The test running when the process died: test_kernel[37-16]"
    assert "out-of-bounds load or store" in advice[1]
    assert len(render.view(verdict("crashed", [], running="test_x", triton_interpreter=False))["advice"]) == 1
