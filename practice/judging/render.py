"""What a learner reads about a verdict: one renderer for the command line and the browser.

``view(verdict)`` turns a verdict (judge_core's schema, plus the sandbox's fields) into a
presentation model with every label in both languages (``{"zh": ..., "en": ...}``): failures first,
identical failures grouped ("53 tests: NotImplementedError: TODO") with one traceback per group,
each group labelled by kind (assertion / exception raised by the learner's code / exception in the
test / skipped), the compared values whole with a diff, tensors by shape, dtype and first differing
element, advice for causes a message alone does not explain (input(), output and memory limits), and
passed tests collapsed to their names. ``text(view, lang, colour)`` prints it for the terminal; the
site's worker calls ``view`` inside Pyodide and the page builds its DOM from the same model.
Standard library only, no I/O: it runs in Pyodide.
"""
from __future__ import annotations

import difflib
import re
import textwrap

STATUS = {
    "accepted": ("通过", "Accepted"), "wrong_answer": ("答案错误", "Wrong answer"), "error": ("运行出错", "Error"),
    "syntax_error": ("语法错误", "Syntax error"), "import_error": ("导入失败", "Import error"),
    "memory_limit": ("超出内存限制", "Memory limit exceeded"), "output_limit": ("输出过多", "Output limit exceeded"),
    "no_tests": ("没有测试", "No tests"), "interrupted": ("已停止", "Stopped"), "timeout": ("超时", "Time limit exceeded"),
    "crashed": ("进程崩溃", "Crashed"), "running": ("运行中…", "Running…"),
}
OUTCOME = {"passed": ("通过", "passed"), "failed": ("失败", "failed"), "error": ("出错", "error"),
           "skipped": ("跳过", "skipped")}
KIND = {
    "assertion": ("断言不成立（结果不对）", "assertion failed (wrong result)"),
    "exception": ("你的代码抛出了异常", "exception raised by your code"),
    "test_exception": ("检查结果时出错（常见原因：返回值的类型或结构不对）",
                       "exception while the test checked your result (often: a return value of the wrong type or shape)"),
    "skipped": ("跳过", "skipped"),
}
LABELS = {
    "where": ("位置", "Where"), "printed": ("打印输出", "Printed"), "printed_outside": ("测试之外的打印输出", "Printed outside the tests"),
    "process_stderr": ("进程的错误输出（末尾）", "Process stderr (tail)"),
    "actual": ("实际（== 左边，通常是你的结果）", "Actual (left of ==, usually your result)"),
    "expected": ("期望（== 右边）", "Expected (right of ==)"),
    "actual_close": ("实际（actual）", "Actual"), "expected_close": ("期望（expected）", "Expected"),
    "diff": ("差异（- 期望，+ 实际）", "Difference (- expected, + actual)"),
    "passed_tests": ("通过的测试", "Passed tests"), "skipped_tests": ("跳过的测试", "Skipped tests"),
    "result": ("结果", "Result"),
}
ADVICE = {
    "memory_limit": ("内存限制是 {memory} MiB（本地可以用 --memory 调整）。", "The memory limit is {memory} MiB (locally, change it with --memory)."),
    "output_limit": ("打印的内容太多，超出部分已丢弃；请删掉调试用的大段输出。",
                     "Too much was printed and the rest was dropped; remove large debug output."),
    "no_tests": ("测试文件里没有测试。", "The test file defines no tests."),
    "timeout": ("检查有没有不会结束的循环或递归，或者算法是否太慢。", "Look for a loop or recursion that never ends, or an algorithm that is too slow."),
    "EOFError": ("评测时没有标准输入：input() 和 sys.stdin 读不到内容。数据请从函数参数获得。",
                 "There is no standard input while judging: input() and sys.stdin read nothing. Take the data from the function's arguments."),
    "NotImplementedError": ("起始代码里的 TODO 还没有实现：把 raise NotImplementedError 换成你的实现。",
                            "The starter's TODO is still there: replace raise NotImplementedError with your implementation."),
}
MESSAGES = {   # outcomes decided outside Python's test run: by the CLI's sandbox or the browser page
    "timeout": ("超过时间限制 {timeout:g} 秒，已被终止。", "ran longer than the {timeout:g} s limit and was stopped."),
    "stopped": ("你停止了这次运行。", "You stopped this run."),
}
DIFF_LINES = 60      # lines of a diff shown
FAILED_FIRST = ("error", "failed")


def pair(entry: tuple[str, str], **fields) -> dict:
    zh, en = entry
    return {"zh": zh.format(**fields), "en": en.format(**fields)}


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit] + " …"


def _kind(test: dict) -> str:
    if test["outcome"] == "failed":
        return "assertion"
    if test["outcome"] == "skipped":
        return "skipped"
    frames = re.findall(r"^(\w+)\.py:\d+ in ", test.get("details", ""), re.MULTILINE)
    return "test_exception" if frames and frames[-1] == "test" else "exception"


def _diff(expected: str, actual: str) -> str:
    if expected == actual:
        return ""
    lines = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm="", n=2))
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines[2:])   # without the ---/+++ header


def compare_view(compare: dict | None) -> dict | None:
    """The blocks of a failed comparison: [{"label": pair, "text": str}], plus a one-line summary."""
    if not compare:
        return None
    close = compare.get("op") == "close"
    names = ("actual_close", "expected_close") if close or compare["kind"] == "tensor" else ("actual", "expected")
    blocks = []
    if compare["kind"] == "tensor":
        actual, expected = compare["actual"], compare["expected"]

        def describe(t: dict) -> str:
            text = f"shape {tuple(t['shape'])}, dtype {t['dtype']}, device {t['device']}"
            return text + (f"\n{t['values']}" if "values" in t else "")

        blocks += [{"label": pair(LABELS[names[0]]), "text": describe(actual)},
                   {"label": pair(LABELS[names[1]]), "text": describe(expected)}]
        if actual["shape"] != expected["shape"]:
            summary = pair(("形状不同：{a} 与 {e}", "shapes differ: {a} vs {e}"), a=tuple(actual["shape"]), e=tuple(expected["shape"]))
        elif "index" in compare:
            summary = pair(("{n}/{total} 个元素不一致；第一个在下标 {i}：实际 {a}，期望 {e}",
                            "{n} of {total} elements differ; the first at index {i}: actual {a}, expected {e}"),
                           n=compare["mismatched"], total=compare["total"], i=tuple(compare["index"]),
                           a=compare["actual_value"], e=compare["expected_value"])
            if "rtol" in compare:
                summary = {k: v + f" (rtol={compare['rtol']:g}, atol={compare['atol']:g})" for k, v in summary.items()}
        elif actual["dtype"] != expected["dtype"]:
            summary = pair(("dtype 不同：{a} 与 {e}", "dtypes differ: {a} vs {e}"), a=actual["dtype"], e=expected["dtype"])
        else:
            summary = None
        return {"summary": summary, "blocks": blocks}
    left, right = compare["left"], compare["right"]
    blocks += [{"label": pair(LABELS[names[0]]), "text": left}, {"label": pair(LABELS[names[1]]), "text": right}]
    if compare.get("op") in ("==", "close"):
        diff = _diff(right, left)
        if diff and (left.count("\n") or right.count("\n") or max(len(left), len(right)) > 60):
            blocks.append({"label": pair(LABELS["diff"]), "text": diff})
    return {"summary": None, "blocks": blocks}


def _advice(verdict: dict) -> list[dict]:
    found = []
    status = verdict["status"]
    if status in ADVICE:
        found.append(pair(ADVICE[status], memory=verdict.get("memory_limit_mb", "?")))
    messages = [verdict.get("message", "")] + [t.get("message", "") for t in verdict.get("tests", [])]
    for name in ("EOFError", "NotImplementedError"):
        if any(m.startswith(name) or f"{name}:" in _first_line(m) for m in messages):
            found.append(pair(ADVICE[name]))
    return found


def view(verdict: dict) -> dict:
    """The presentation model of ``verdict`` (see the module docstring)."""
    tests = verdict.get("tests", [])
    counts = verdict.get("counts") or {"passed": 0, "total": len(tests)}
    groups: dict[tuple, dict] = {}
    for test in tests:
        if test["outcome"] not in FAILED_FIRST:
            continue
        kind = _kind(test)
        # Assertion messages carry the values, so identical ones are the same failure; exceptions
        # are grouped by their one-line description.
        key = (test["outcome"], kind, test["message"] if kind == "assertion" else _first_line(test["message"]))
        group = groups.get(key)
        if group is None:
            groups[key] = group = {
                "outcome": test["outcome"], "kind": kind, "label": pair(KIND[kind]),
                "outcome_label": pair(OUTCOME[test["outcome"]]), "names": [],
                "headline": _first_line(test["message"]), "message": test["message"].rstrip(),
                "details": test.get("details", ""), "stdout": test.get("stdout", ""),
                "compare": compare_view(test.get("compare"))}
        group["names"].append(test["name"])
    ordered = sorted(groups.values(), key=lambda g: FAILED_FIRST.index(g["outcome"]))
    passed = [t["name"] for t in tests if t["outcome"] == "passed"]
    result = {
        "status": verdict["status"], "title": pair(STATUS.get(verdict["status"], (verdict["status"],) * 2)),
        "passed_count": counts.get("passed", len(passed)), "total": counts.get("total", len(tests)),
        "summary": pair(("{p}/{t} 个测试通过", "{p}/{t} tests passed"), p=counts.get("passed", 0), t=counts.get("total", 0)),
        "message": verdict.get("message", ""), "details": verdict.get("details", ""),
        "advice": _advice(verdict), "groups": ordered, "passed": passed,
        "skipped": [t["name"] for t in tests if t["outcome"] == "skipped"],
        "output": verdict.get("output", "") if verdict["status"] != "accepted" else "",
        "process_stderr": _learner_lines(verdict.get("process_stderr", ""))
        if verdict["status"] in ("crashed", "memory_limit", "timeout") else "",
        "tests": [[t["name"], t["outcome"]] for t in tests],
    }
    return result


def _learner_lines(stderr: str) -> str:
    """A crash report without the judge's and pytest's own frames."""
    noise = re.compile(r'^\s*File "[^"]*(site-packages|judge_core\.py|judge\.py|sandbox\.py|<frozen )')
    return "\n".join(line for line in stderr.splitlines() if not noise.match(line))[-1500:]


# ----------------------------------------------------------------------------------------------
# The terminal


def _label(key: str, lang: str) -> str:
    return LABELS[key][1 if lang == "en" else 0]


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.rstrip().splitlines())


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … (+{len(names) - limit})" if len(names) > limit else "")


def status_text(status: str, lang: str) -> str:
    zh, en = STATUS.get(status, (status, status))
    return f"{zh} ({status})" if lang == "zh" else status


def text(model: dict, lang: str, colour=lambda text, code: text, seconds: float | None = None) -> str:
    """``model`` (from view) as terminal text in ``lang``; ``colour(text, ansi_code)`` styles it."""
    out = []
    for group in model["groups"]:
        mark = colour("✗" if group["outcome"] == "failed" else "!", "31")
        count = len(group["names"])
        if count == 1:
            head = f"  {mark} {group['names'][0]}  [{group['label'][lang]}]"
        else:
            head = f"  {mark} " + (f"{count} 个测试" if lang == "zh" else f"{count} tests") + f"  [{group['label'][lang]}]"
        out.append(head)
        if count > 1:
            out.append(textwrap.fill(_names(group["names"]), 100, initial_indent="      ", subsequent_indent="      "))
        compare = group["compare"]
        if compare:
            out.append(colour(_indent(group["headline"]), "31"))
            if compare["summary"]:
                out.append(colour(_indent(compare["summary"][lang]), "31"))
            for block in compare["blocks"]:
                out.append(_indent(block["label"][lang] + ":") + "\n" + _indent(block["text"], "        "))
        else:
            out.append(colour(_indent(group["message"]), "31"))
        if group["details"]:
            out.append(_indent(_label("where", lang) + ":") + "\n" + _indent(group["details"], "        "))
        if group["stdout"].strip():
            out.append(_indent(_label("printed", lang) + ":") + "\n" + _indent(group["stdout"][-2000:], "        "))
    if model["passed"]:
        label = f"{len(model['passed'])} 个测试通过" if lang == "zh" else f"{len(model['passed'])} tests passed"
        out.append(textwrap.fill(f"{colour('✓', '32')} {label}: {_names(model['passed'])}", 100,
                                 initial_indent="  ", subsequent_indent="      "))
    if model["skipped"]:
        out.append(f"  {colour('-', '33')} {_label('skipped_tests', lang)}: {_names(model['skipped'])}")
    if model["message"]:
        out.append(colour(_indent(model["message"], "  "), "31"))
    if model["details"]:
        out.append(_indent(model["details"], "    "))
    if model["output"].strip():
        out.append(_indent(_label("printed_outside", lang) + ":", "  ") + "\n" + _indent(model["output"][-2000:], "    "))
    if model["process_stderr"].strip():
        out.append(_indent(_label("process_stderr", lang) + ":", "  ") + "\n" + _indent(model["process_stderr"], "    "))
    for advice in model["advice"]:
        out.append(colour(_indent(advice[lang], "  → "), "33"))
    summary = model["summary"][lang]
    if seconds is not None:
        summary += f"，用时 {seconds:.2f} 秒" if lang == "zh" else f" in {seconds:.2f} s"
    result = ("结果：" if lang == "zh" else "Result: ") + status_text(model["status"], lang)
    out.append(colour(result, "1;32" if model["status"] == "accepted" else "1;31") + "  " + summary)
    return "\n".join(out)
