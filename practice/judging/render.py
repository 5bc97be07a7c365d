"""What a learner reads about a verdict: one renderer for the command line and the browser.

``view(verdict)`` turns a verdict (judge_core's schema, plus the sandbox's fields) into a
presentation model with every label in both languages (``{"zh": ..., "en": ...}``): failures first,
failures that repeat grouped, the first one shown with a count ("53 tests: NotImplementedError: TODO";
"10 cases of test_random fail at test.py:12": the same test function failing at the same line, or the
same exception raised at the same place), each group labelled by kind (assertion / a starter's TODO /
exception raised by the learner's code / in the test's own line / in code the test called /
skipped), the failing case's inputs (judge_core's ``case``), the compared values labelled by the
comparison they are part of (``==`` has an actual and an expected side; ``<=`` of sets is a subset
check that names the elements breaking it; ``in``, ``>``, ``is`` ... have a left and a right side)
with a diff, long lists by the first element that differs, tensors by shape, dtype and first
differing element, advice for causes a message alone does not explain (input(), output and memory
limits, a crash in the Triton interpreter), and passed tests collapsed to their names. ``text(view, lang, colour)`` prints it for the terminal; the
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
    "todo": ("起始代码里的 TODO 还没有完成（NotImplementedError）", "a TODO of the starter is not done yet (NotImplementedError)"),
    "test_exception": ("检查结果时出错（常见原因：返回值的类型或结构不对）",
                       "exception while the test checked your result (often: a return value of the wrong type or shape)"),
    "library": ("测试调用的代码抛出了异常（通常是你的结果或你注册的东西不符合它的要求：看消息）",
                "exception raised by code the test called (usually your result, or what you registered, is not what "
                "it expects: read the message)"),
    "skipped": ("跳过", "skipped"),
}
LABELS = {
    "where": ("位置", "Where"), "printed": ("打印输出", "Printed"), "printed_outside": ("测试之外的打印输出", "Printed outside the tests"),
    "process_stderr": ("进程的错误输出（末尾）", "Process stderr (tail)"),
    "actual": ("实际（== 左边，通常是你的结果）", "Actual (left of ==, usually your result)"),
    "expected": ("期望（== 右边）", "Expected (right of ==)"),
    "actual_close": ("实际（actual）", "Actual"), "expected_close": ("期望（expected）", "Expected"),
    "left": ("{op} 的左边", "Left of {op}"), "right": ("{op} 的右边", "Right of {op}"),
    "subset_left": ("应是子集的一边（{op} 的左边）", "The side that must be the subset (left of {op})"),
    "subset_right": ("应包含它的一边（{op} 的右边）", "The side that must contain it (right of {op})"),
    "superset_left": ("应包含另一边的一边（{op} 的左边）", "The side that must contain the other (left of {op})"),
    "superset_right": ("应是子集的一边（{op} 的右边）", "The side that must be the subset (right of {op})"),
    "item": ("要找的元素（{op} 的左边）", "The item (left of {op})"),
    "container": ("在其中找的容器（{op} 的右边）", "The container (right of {op})"),
    "actual_item": ("实际 {path}（第一个不同的元素）", "Actual {path} (the first element that differs)"),
    "expected_item": ("期望 {path}", "Expected {path}"),
    "case": ("失败的用例（粘贴到 Python 里即可重建输入，再调用你的函数）",
             "The failing case (paste it into Python to rebuild the inputs, then call your function)"),
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
    "running": ("进程崩溃时正在运行的测试：{test}", "The test running when the process died: {test}"),
    "triton_crash": ("Triton 解释器不检查指针：这样的崩溃多半是内核越界读写（tl.load / tl.store 没有 mask，或者 mask 不对）。"
                     "越界写坏的内存可能在后面的测试里才暴露，所以信号和位置每次可能不同。",
                     "The Triton interpreter does not check pointers: a crash like this is most likely an out-of-bounds "
                     "load or store in your kernel (a tl.load / tl.store without a mask, or with a wrong one). Memory "
                     "written out of bounds may only break later, in another test, so the signal and the place can "
                     "change from run to run."),
}
SUMMARIES = {   # one line over a failed comparison, by what it checks
    "length": ("实际有 {a} 个元素，期望 {e} 个；前 {n} 个相同", "actual has {a} items, expected {e}; they agree on the first {n}"),
    "sizes": ("实际有 {a} 个元素，期望 {e} 个", "actual has {a} items, expected {e}"),
    "keys": ("{path} 处的键不同", "the keys differ at {path}"),
    "first": ("第一个不同之处在 {path}：实际 {a}，期望 {e}", "the first difference is at {path}: actual {a}, expected {e}"),
    "item": ("第一个不同的元素是 {path}（共 {n} 个元素）", "the first element that differs is {path} (of {n})"),
    "subset": ("子集检查：左边的这些元素不在右边：{extra}", "subset check: these elements of the left are not in the right: {extra}"),
    "superset": ("超集检查：右边的这些元素不在左边：{extra}", "superset check: these elements of the right are not in the left: {extra}"),
    "strict": ("两边相等，但 {op} 要求严格的子集/超集", "the two sides are equal, but {op} needs a strict subset or superset"),
    "order": ("要求 左边 {op} 右边，但不成立", "needs left {op} right, which does not hold"),
    "!=": ("两边相等，但要求不相等", "the two sides are equal; they must differ"),
    "in": ("左边不在右边里", "the left is not in the right"),
    "not in": ("左边在右边里，但要求不在", "the left is in the right; it must not be"),
    "is": ("不是同一个对象（is 比较的是对象本身，不是值）", "not the same object (is compares identity, not value)"),
    "is_constant": ("左边必须就是 {right}", "the left must be {right} itself"),
    "is not": ("是同一个对象，但要求不是", "the same object; it must not be"),
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
    if _first_line(test["message"]).startswith("NotImplementedError"):
        return "todo"
    raised = test.get("raised_in")
    if raised:
        return {"yours": "exception", "test": "test_exception"}.get(raised, "library")
    frames = re.findall(r"^(\w+)\.py:\d+ in ", test.get("details", ""), re.MULTILINE)   # verdicts before raised_in
    return "test_exception" if frames and frames[-1] == "test" else "exception"


def _location(details: str) -> str:
    """The innermost frame of a test's details ("test.py:12"), "" without one."""
    places = re.findall(r"^(\S.*?:\d+) in ", details, re.MULTILINE)
    return places[-1] if places else ""


def _headline(message: str) -> str:
    """A failed assertion's one-line form, after the test's own message when it has one (which is kept
    whole: it was written for the learner, e.g. a traceback from another process)."""
    lines = message.rstrip().splitlines()
    explained = next((i for i, line in enumerate(lines) if line.startswith("assert ")), None)
    if not explained:
        return _first_line(message)
    return "\n".join(lines[:explained + 1])


def _diff(expected: str, actual: str) -> str:
    if expected == actual:
        return ""
    lines = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm="", n=2))
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"... ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines[2:])   # without the ---/+++ header


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " …"


def _tensor_view(compare: dict) -> dict:
    actual, expected = compare["actual"], compare["expected"]

    def describe(t: dict) -> str:
        text = f"shape {tuple(t['shape'])}, dtype {t['dtype']}, device {t['device']}"
        return text + (f"\n{t['values']}" if "values" in t else "")

    blocks = [{"label": pair(LABELS["actual_close"]), "text": describe(actual)},
              {"label": pair(LABELS["expected_close"]), "text": describe(expected)}]
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


def compare_view(compare: dict | None) -> dict | None:
    """The blocks of a failed comparison: [{"label": pair, "text": str}], plus a one-line summary, each
    labelled by what the comparison checks (see the module docstring)."""
    if not compare:
        return None
    if compare["kind"] == "tensor":
        return _tensor_view(compare)
    op = compare.get("op", "==")
    left, right = compare["left"], compare["right"]
    if op in ("==", "close"):
        names = ("actual", "expected") if op == "==" else ("actual_close", "expected_close")
    elif op in ("<=", "<", ">=", ">") and "breaking" in compare:
        names = ("subset_left", "subset_right") if op in ("<=", "<") else ("superset_left", "superset_right")
    elif op in ("in", "not in"):
        names = ("item", "container")
    else:
        names = ("left", "right")
    blocks = [{"label": pair(LABELS[names[0]], op=op), "text": left},
              {"label": pair(LABELS[names[1]], op=op), "text": right}]
    summary = None
    first, item = compare.get("first"), compare.get("item")
    if first:
        lengths = first.get("lengths")
        if first.get("keys"):
            summary = pair(SUMMARIES["keys"], path=first["path"] or "[]")
        elif lengths:
            summary = pair(SUMMARIES["length" if min(lengths) else "sizes"], a=lengths[0], e=lengths[1], n=min(lengths))
            if first["path"]:
                summary = {k: f"{first['path']}: {v}" for k, v in summary.items()}
        else:
            summary = pair(SUMMARIES["first"], path=first["path"], a=_short(first["actual"]), e=_short(first["expected"]))
    if item:   # long values: the element that differs, instead of the whole values and their diff
        which = pair(SUMMARIES["item"], path=item["path"], n=item["count"][1])
        summary = {k: "; ".join(filter(None, (which[k], (summary or {}).get(k)))) for k in which}
        blocks = [{"label": pair(LABELS["actual_item"], path=item["path"]), "text": item["actual"]},
                  {"label": pair(LABELS["expected_item"], path=item["path"]), "text": item["expected"]}]
    elif "breaking" in compare:
        extra = compare["breaking"]
        summary = pair(SUMMARIES["strict"], op=op) if extra in ("[]", "set()") else \
            pair(SUMMARIES["subset" if op in ("<=", "<") else "superset"], extra=_short(extra, 200))
    elif op in ("<", "<=", ">", ">="):
        summary = pair(SUMMARIES["order"], op=op)
    elif op == "is" and right in ("None", "True", "False"):
        summary = pair(SUMMARIES["is_constant"], right=right)
    elif op in SUMMARIES:
        summary = pair(SUMMARIES[op])
    if op in ("==", "close") and not item:
        diff = _diff(right, left)
        if diff and (left.count("\n") or right.count("\n") or max(len(left), len(right)) > 60):
            blocks.append({"label": pair(LABELS["diff"]), "text": diff})
    return {"summary": summary, "blocks": blocks}


def _advice(verdict: dict) -> list[dict]:
    found = []
    status = verdict["status"]
    if status in ADVICE:
        found.append(pair(ADVICE[status], memory=verdict.get("memory_limit_mb", "?")))
    messages = [verdict.get("message", "")] + [t.get("message", "") for t in verdict.get("tests", [])]
    for name in ("EOFError", "NotImplementedError"):
        if any(m.startswith(name) or f"{name}:" in _first_line(m) for m in messages):
            found.append(pair(ADVICE[name]))
    if status in ("crashed", "timeout") and verdict.get("running"):
        found.append(pair(ADVICE["running"], test=verdict["running"]))
    if status == "crashed" and verdict.get("triton_interpreter"):
        found.append(pair(ADVICE["triton_crash"]))
    return found


def _group_key(test: dict, kind: str) -> tuple:
    """Failures that repeat share a key: one test function failing at the same line (its random cases),
    or the same exception raised at the same place."""
    where = _location(test.get("details", ""))
    if kind == "assertion":
        return (test["outcome"], kind, test["name"].split("[")[0], where) if where else (test["outcome"], kind, test["message"])
    first = _first_line(test["message"])
    return (test["outcome"], kind, first.split(":")[0], where) if where else (test["outcome"], kind, first)


def view(verdict: dict) -> dict:
    """The presentation model of ``verdict`` (see the module docstring)."""
    tests = verdict.get("tests", [])
    counts = verdict.get("counts") or {"passed": 0, "total": len(tests)}
    groups: dict[tuple, dict] = {}
    for test in tests:
        if test["outcome"] not in FAILED_FIRST:
            continue
        kind = _kind(test)
        key = _group_key(test, kind)
        group = groups.get(key)
        if group is None:
            groups[key] = group = {
                "outcome": test["outcome"], "kind": kind, "label": pair(KIND[kind]),
                "outcome_label": pair(OUTCOME[test["outcome"]]), "names": [], "note": None,
                "headline": _headline(test["message"]), "message": test["message"].rstrip(),
                "details": test.get("details", ""), "stdout": test.get("stdout", ""),
                "compare": compare_view(test.get("compare")),
                "case": {"label": pair(LABELS["case"]), "text": test["case"]} if test.get("case") else None}
        elif test["message"].rstrip() != group["message"] and group["note"] is None:
            group["note"] = True   # filled in below, once the count is known
        group["names"].append(test["name"])
    for group in groups.values():
        if group["note"]:
            group["note"] = pair(("这 {n} 个测试在同一处失败，各自的值不同；下面是第一个（{first}）",
                                  "these {n} tests fail at the same place with different values; the first ({first}) is shown"),
                                 n=len(group["names"]), first=group["names"][0])
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
    noise = re.compile(r'^\s*File "[^"]*(site-packages|judge_core\.py|judge\.py|sandbox\.py|<frozen )|^Extension modules: ')
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
        if group.get("note"):
            out.append(colour(_indent(group["note"][lang]), "33"))
        compare = group["compare"]
        if compare:
            out.append(colour(_indent(group["headline"]), "31"))
            if compare["summary"]:
                out.append(colour(_indent(compare["summary"][lang]), "31"))
            for block in compare["blocks"]:
                out.append(_indent(block["label"][lang] + ":") + "\n" + _indent(block["text"], "        "))
        else:
            out.append(colour(_indent(group["message"]), "31"))
        if group.get("case"):
            out.append(_indent(group["case"]["label"][lang] + ":") + "\n" + _indent(group["case"]["text"], "        "))
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
