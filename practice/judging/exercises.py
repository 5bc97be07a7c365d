"""Exercise discovery, front-matter parsing and validation (shared by the judge and the site build).

An exercise is a folder ``practice/NNN_slug/`` holding ``problem.md``, ``starter.py``,
``solution.py`` and ``test.py``. ``problem.md`` starts with front matter in a strict YAML subset
(``key: value`` lines; ints, quoted or bare strings, inline lists; ``#`` comments)::

    ---
    id: 180
    title: 平台插件：发现、选择与设备 API 的转发
    title_en: "Platform plugins: discovery, selection and device-API forwarding"
    chapter: 1
    difficulty: easy        # easy | medium | hard
    requires: []            # [] = pure Python; or [torch], [torch, triton]
    timeout: 10             # seconds
    engine: [mini_platform.kv_cache.find_cached_prefix]   # optional, see below
    ---

followed by the Chinese statement, a ``## English`` section with the English statement, and the
shared worked example (``## 示例 / Example``). Standard library only; runs in Pyodide too.

``engine`` (optional) names the engine functions or classes this exercise's solution can stand in
for, by dotted path; the solution defines each under the same last name with the same signature.
``judge.py engine`` swaps the learner's accepted versions into the engine (see engine_parts.py).

Two more parts, checked by ``judge.py check``:

- ``wrong/NN_name.py``: wrong solutions a learner might write (at least MIN_WRONG), each starting
  with ``# Mistake: <what the learner got wrong>``; every one must be rejected by the tests.
- ``right/NN_name.py`` (optional): correct solutions written another way than solution.py, each starting
  with ``# Correct: <how it differs>``; every one must be accepted, so that the tests do not reject what
  the statement allows (a different order of work, another error message, another helper).
- ``hints.md``: progressive hints, sections ``## 1``, ``## 2``, ... each in Chinese, then a paragraph
  starting ``**English:**`` with the same hint in English.

A project exercise (the capstone, 260-265) judges a folder rather than one file: its starter and
solution define only ``PROJECT = "<folder, relative to the repository root>"`` (read with
:func:`project_of`), the test installs that folder, and the judge's messages and ``judge.py solution``
point at the folder, not at the one-line file.

Tests and the learner's next step: a failed test shows its parameters and the failing case (see
judge_core's module docstring), so every randomized or generated case must be rebuildable from what
the verdict shows. The convention for test.py:

- draw from fixed seeds (``random.Random(seed)``, ``torch.Generator().manual_seed(seed)``), the seed
  a ``@pytest.mark.parametrize`` parameter where there are several (shown as ``seed = 3``);
- before the assertions, keep a local ``repro`` that rebuilds the inputs the learner's function gets:
  a dict of name -> value (``repro = {"tree": tree}``; shown as ``tree = {...}`` lines that paste into
  Python; tensors of up to 256 elements as ``torch.tensor([...], dtype=...)``), or, for inputs too big
  to print, a one-line recipe string built from the same numbers the test used
  (``repro = f"g = torch.Generator().manual_seed({seed}); x = torch.randn({n}, {d}, generator=g)"``),
  or a list of lines for a stateful test, the calls made so far (``repro = [f"pool = BlockPool({n})"]``,
  then ``repro.append(f"pool.allocate({k})")`` before each call). A loop over cases updates it before each case. Name it ``repro`` and nothing else by that name;
  ``# noqa: F841`` keeps linters quiet about the unused local;
- where a test checks a sequence of steps, compare the whole history with ``==`` (the verdict then
  names the first step that differs) or assert step by step with the step in the message.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

_PARSING = threading.Lock()
PRACTICE_DIR = Path(__file__).resolve().parents[1]   # practice/: the exercise folders
FILES = ("problem.md", "starter.py", "solution.py", "test.py")
DIFFICULTIES = ("easy", "medium", "hard")
KNOWN_REQUIREMENTS = ("torch", "triton", "torch_npu")
FIELDS = {"id": int, "title": str, "title_en": str, "chapter": int, "difficulty": str,
          "requires": list, "timeout": int}
_DIR_NAME = re.compile(r"^(\d{3})_([a-z0-9]+(?:_[a-z0-9]+)*)$")
_ENGLISH = re.compile(r"^## English\s*$", re.MULTILINE)
_H2 = re.compile(r"^## ", re.MULTILINE)
_EXAMPLE = re.compile(r"^## .*(示例|Example)", re.MULTILINE)
_HINT = re.compile(r"^## (\d+)\s*$", re.MULTILINE)
_HINT_ENGLISH = re.compile(r"^\*\*English:?\*\*:?[ \t]*", re.MULTILINE)
_WRONG_NAME = re.compile(r"^\d{2}_[a-z0-9_]+\.py$")
MISTAKE_PREFIX = "# Mistake:"
CORRECT_PREFIX = "# Correct:"
MIN_WRONG = 5


class ExerciseError(ValueError):
    """A malformed or missing exercise; the message is bilingual (Chinese, then English)."""

    def __init__(self, zh: str, en: str) -> None:
        super().__init__(f"{zh}\n{en}")
        self.zh, self.en = zh, en


@dataclass(frozen=True)
class Exercise:
    id: int
    slug: str
    path: Path            # the exercise folder
    title: str            # Chinese title
    title_en: str
    chapter: int
    difficulty: str       # easy | medium | hard
    requires: tuple[str, ...]   # () = pure Python (runs in the browser)
    timeout: int          # seconds
    body: str             # problem.md after the front matter
    engine: tuple[str, ...] = ()  # dotted paths of the engine parts the solution can replace

    @property
    def name(self) -> str:
        """The folder name, ``NNN_slug``; the workspace file is ``<name>.py``."""
        return f"{self.id}_{self.slug}"

    @property
    def pure_python(self) -> bool:
        return not self.requires

    def metadata(self) -> dict:
        """The front matter plus name and pure_python, JSON-serialisable (for the site's index)."""
        return {"id": self.id, "slug": self.slug, "name": self.name, "title": self.title,
                "title_en": self.title_en, "chapter": self.chapter, "difficulty": self.difficulty,
                "requires": list(self.requires), "timeout": self.timeout, "pure_python": self.pure_python,
                "engine": list(self.engine)}

    def file(self, name: str) -> Path:
        """``problem.md``, ``starter.py``, ``solution.py`` or ``test.py`` of this exercise."""
        if name not in FILES:
            raise ValueError(f"unknown exercise file {name!r}; expected one of {FILES}")
        return self.path / name

    def statement(self, lang: str = "zh") -> str:
        """The statement in one language ("zh" or "en") followed by the shared sections (example)."""
        zh, en, shared = split_statement(self.body)
        return ((en if lang == "en" else zh) + ("\n\n" + shared if shared else "")).strip() + "\n"

    def test_functions(self, cache: Path | None = None) -> list[str]:
        """Names of the module-level test functions in test.py (``test*``, not fixtures), read with
        ast, nothing imported; each is collected by pytest at least once. Given ``cache`` (a folder), the
        names are kept there by the test file's content (parsing takes longer than reading them back)."""
        source = self.file("test.py").read_bytes()
        stored = Path(cache, hashlib.sha256(source).hexdigest() + ".names.json") if cache else None
        if stored is not None:
            try:
                names = json.loads(stored.read_text(encoding="utf-8"))
                if isinstance(names, list) and all(isinstance(n, str) for n in names):
                    return names
            except (OSError, ValueError):
                pass
        with _PARSING:   # CPython 3.11.7's ast.parse is not thread-safe (``judge.py check`` judges two at a time)
            tree = ast.parse(source.decode("utf-8"))

        def is_fixture(decorator: ast.expr) -> bool:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            return (getattr(target, "attr", None) or getattr(target, "id", None)) == "fixture"

        names = [node.name for node in tree.body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
                 and not any(is_fixture(d) for d in node.decorator_list)]
        if stored is not None:
            try:
                stored.parent.mkdir(parents=True, exist_ok=True)
                partial = stored.with_suffix(f".{os.getpid()}")
                partial.write_text(json.dumps(names), encoding="utf-8")
                os.replace(partial, stored)
            except OSError:   # a read-only cache: parse again next time
                pass
        return names

    def hints(self) -> list[dict]:
        """The hints of hints.md in order, each ``{"zh": markdown, "en": markdown}``; [] without the file.
        Raises ExerciseError when the file does not follow the format."""
        path = self.path / "hints.md"
        return parse_hints(path.read_text(encoding="utf-8"), f"{self.name}/hints.md") if path.is_file() else []

    def wrong_solutions(self) -> list[Path]:
        """The files ``wrong/*.py``, sorted by name."""
        folder = self.path / "wrong"
        return sorted(folder.glob("*.py")) if folder.is_dir() else []

    def right_solutions(self) -> list[Path]:
        """The files ``right/*.py``, sorted by name."""
        folder = self.path / "right"
        return sorted(folder.glob("*.py")) if folder.is_dir() else []

    def example_tests(self) -> list[str]:
        """Names of the ``test_example*`` functions in test.py."""
        return [name for name in self.test_functions() if name.startswith("test_example")]


def split_statement(body: str) -> tuple[str, str, str]:
    """Split a problem body into (Chinese part, English part, shared sections after the English one).

    The English part runs from ``## English`` to the next level-2 heading. Without an English
    section, both languages get the whole body.
    """
    match = _ENGLISH.search(body)
    if not match:
        return body.strip(), body.strip(), ""
    rest = body[match.end():]
    following = _H2.search(rest)
    end = following.start() if following else len(rest)
    return body[:match.start()].strip(), rest[:end].strip(), rest[end:].strip()


def parse_hints(text: str, source: str = "hints.md") -> list[dict]:
    """``## 1`` / ``## 2`` / ... sections, each Chinese text then a ``**English:**`` paragraph."""
    matches = list(_HINT.finditer(text))
    if not matches:
        raise ExerciseError(f"{source}：没有找到 '## 1' 这样的提示小节", f"{source}: no hint sections such as '## 1'")
    hints = []
    for number, match in enumerate(matches, start=1):
        if int(match.group(1)) != number:
            raise ExerciseError(f"{source}：第 {number} 个提示的标题应为 '## {number}'，实际是 {match.group(0).strip()!r}",
                                f"{source}: hint {number} must be headed '## {number}', got {match.group(0).strip()!r}")
        end = matches[number].start() if number < len(matches) else len(text)
        body = text[match.end():end]
        english = _HINT_ENGLISH.search(body)
        if not english or not body[:english.start()].strip() or not body[english.end():].strip():
            raise ExerciseError(f"{source}：提示 {number} 需要中文内容和一段以 **English:** 开头的英文",
                                f"{source}: hint {number} needs Chinese text and a paragraph starting **English:**")
        hints.append({"zh": body[:english.start()].strip(), "en": body[english.end():].strip()})
    return hints


def project_of(path: Path) -> str | None:
    """The ``PROJECT = "..."`` folder a project exercise's file names (see the module docstring), read
    without importing it; None for an ordinary exercise file or one that does not parse."""
    try:
        with _PARSING:
            tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PROJECT"] \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def mistake(path: Path, prefix: str = MISTAKE_PREFIX) -> str:
    """The ``# Mistake: ...`` sentence of a wrong solution (``# Correct: ...`` of a right one with
    prefix=CORRECT_PREFIX); "" when its first line has none."""
    first = (path.read_text(encoding="utf-8").splitlines() or [""])[0]
    return first[len(prefix):].strip() if first.startswith(prefix) else ""


def _scalar(text: str, where: str):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text[:1] in "[{\"'" or text[-1:] in "]}\"'":
        raise ExerciseError(f"{where}：无法解析的值 {text!r}", f"{where}: cannot parse the value {text!r}")
    return text


def _value(text: str, where: str):
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(item, where) for item in inner.split(",")] if inner else []
    return _scalar(text, where)


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if ch in "\"'" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def parse_front_matter(text: str, source: str = "problem.md") -> tuple[dict, str]:
    """Parse ``---``-delimited front matter; return (fields, body). Raises ExerciseError."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise ExerciseError(f"{source}：第一行必须是 '---'（front matter 开始）",
                            f"{source}: the first line must be '---' (start of the front matter)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ExerciseError(f"{source}：front matter 没有结束的 '---'",
                            f"{source}: the front matter has no closing '---'") from None
    fields: dict = {}
    for number, raw in enumerate(lines[1:end], start=2):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        where = f"{source}:{number}"
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ExerciseError(f"{where}：应为 'key: value'，实际是 {raw!r}",
                                f"{where}: expected 'key: value', got {raw!r}")
        if key in fields:
            raise ExerciseError(f"{where}：重复的键 {key!r}", f"{where}: duplicate key {key!r}")
        fields[key] = _value(value, where)
    return fields, "\n".join(lines[end + 1:]).strip() + "\n"


def _check_fields(fields: dict, source: str) -> None:
    missing = [key for key in FIELDS if key not in fields]
    if missing:
        raise ExerciseError(f"{source}：front matter 缺少字段 {', '.join(missing)}",
                            f"{source}: the front matter lacks {', '.join(missing)}")
    for key, kind in FIELDS.items():
        if not isinstance(fields[key], kind) or (kind is str and not fields[key]):
            raise ExerciseError(f"{source}：{key} 应为 {kind.__name__}，实际是 {fields[key]!r}",
                                f"{source}: {key} must be a non-empty {kind.__name__}, got {fields[key]!r}")
    if fields["difficulty"] not in DIFFICULTIES:
        raise ExerciseError(f"{source}：difficulty 必须是 {'/'.join(DIFFICULTIES)} 之一，实际是 {fields['difficulty']!r}",
                            f"{source}: difficulty must be one of {'/'.join(DIFFICULTIES)}, got {fields['difficulty']!r}")
    unknown = [r for r in fields["requires"] if r not in KNOWN_REQUIREMENTS]
    if unknown:
        raise ExerciseError(f"{source}：requires 里有未知的依赖 {unknown}（可用：{', '.join(KNOWN_REQUIREMENTS)}）",
                            f"{source}: unknown requirements {unknown} (known: {', '.join(KNOWN_REQUIREMENTS)})")
    if not 1 <= fields["timeout"] <= 600:
        raise ExerciseError(f"{source}：timeout 应在 1 到 600 秒之间，实际是 {fields['timeout']}",
                            f"{source}: timeout must be 1..600 seconds, got {fields['timeout']}")
    engine = fields.get("engine", [])
    if not isinstance(engine, list) or not all(
            isinstance(p, str) and re.fullmatch(r"mini_platform(\.[A-Za-z_][A-Za-z0-9_]*)+", p) for p in engine):
        raise ExerciseError(f"{source}：engine 应为引擎里的点分路径列表（如 [mini_platform.kv_cache.hash_block]），实际是 {engine!r}",
                            f"{source}: engine must be a list of dotted engine paths (e.g. [mini_platform.kv_cache.hash_block]), got {engine!r}")
    expected_chapter = (fields["id"] - 170) // 10
    if fields["chapter"] != expected_chapter:
        raise ExerciseError(f"{source}：编号 {fields['id']} 属于第 {expected_chapter} 章，但 chapter 是 {fields['chapter']}",
                            f"{source}: id {fields['id']} belongs to chapter {expected_chapter}, but chapter is {fields['chapter']}")


def load_exercise(path: str | Path) -> Exercise:
    """Load and validate one exercise folder. Raises ExerciseError naming what is wrong."""
    path = Path(path)
    match = _DIR_NAME.match(path.name)
    if not match:
        raise ExerciseError(f"{path}：练习目录名应为 NNN_slug（三位编号、小写字母数字和下划线）",
                            f"{path}: an exercise folder is named NNN_slug (three digits, lowercase letters, digits, underscores)")
    absent = [name for name in FILES if not (path / name).is_file()]
    if absent:
        raise ExerciseError(f"{path}：缺少文件 {', '.join(absent)}", f"{path}: missing {', '.join(absent)}")
    source = f"{path.name}/problem.md"
    fields, body = parse_front_matter((path / "problem.md").read_text(encoding="utf-8"), source)
    _check_fields(fields, source)
    if fields["id"] != int(match.group(1)):
        raise ExerciseError(f"{source}：id 是 {fields['id']}，但目录编号是 {match.group(1)}",
                            f"{source}: id is {fields['id']} but the folder number is {match.group(1)}")
    return Exercise(id=fields["id"], slug=match.group(2), path=path, title=fields["title"],
                    title_en=fields["title_en"], chapter=fields["chapter"], difficulty=fields["difficulty"],
                    requires=tuple(fields["requires"]), timeout=fields["timeout"], body=body,
                    engine=tuple(fields.get("engine", [])))


def exercise_dirs(root: str | Path = PRACTICE_DIR) -> list[Path]:
    """Folders under ``root`` named like an exercise (NNN_slug), sorted by id; nothing is loaded."""
    return sorted((p for p in Path(root).iterdir() if p.is_dir() and _DIR_NAME.match(p.name)),
                  key=lambda p: (int(p.name[:3]), p.name))


def discover(root: str | Path = PRACTICE_DIR) -> list[Exercise]:
    """Every exercise under ``root``, validated, sorted by id. Raises ExerciseError on the first bad one
    or on a duplicate id."""
    exercises = [load_exercise(p) for p in exercise_dirs(root)]
    seen: dict[int, Path] = {}
    for exercise in exercises:
        if exercise.id in seen:
            raise ExerciseError(f"编号 {exercise.id} 重复：{seen[exercise.id].name} 和 {exercise.path.name}",
                                f"duplicate id {exercise.id}: {seen[exercise.id].name} and {exercise.path.name}")
        seen[exercise.id] = exercise.path
    return exercises


def find(exercise_id: int | str, root: str | Path = PRACTICE_DIR) -> Exercise:
    """The exercise with this id (loads only that folder). Raises ExerciseError when there is none."""
    text = str(exercise_id).strip()
    if not re.fullmatch(r"\d{1,3}", text):
        raise ExerciseError(f"{text!r} 不是练习编号（应为三位数字，如 180）",
                            f"{text!r} is not an exercise id (three digits, e.g. 180)")
    matches = [p for p in exercise_dirs(root) if int(p.name[:3]) == int(text)]
    if not matches:
        known = ", ".join(p.name[:3] for p in exercise_dirs(root)) or "-"
        raise ExerciseError(f"没有编号为 {text} 的练习（现有：{known}）。用 `python practice/judge.py list` 查看。",
                            f"no exercise {text} (present: {known}). See `python practice/judge.py list`.")
    if len(matches) > 1:
        raise ExerciseError(f"编号 {text} 重复：{', '.join(p.name for p in matches)}",
                            f"duplicate id {text}: {', '.join(p.name for p in matches)}")
    return load_exercise(matches[0])


def validate_layout(exercise: Exercise) -> list[str]:
    """Problems with an exercise's content beyond its front matter (bilingual, one per item);
    empty when fine. Used by ``judge.py check`` and the site build."""
    problems = []
    if not _ENGLISH.search(exercise.body):
        problems.append("problem.md 缺少 '## English' 一节 / problem.md has no '## English' section")
    if not _EXAMPLE.search(exercise.body):
        problems.append("problem.md 缺少示例一节（## 示例 / Example）/ problem.md has no example section")
    try:
        if not exercise.example_tests():
            problems.append("test.py 没有 test_example* 测试 / test.py has no test_example* test")
    except SyntaxError as exc:
        problems.append(f"test.py 有语法错误 / test.py has a syntax error: {exc}")
    for path in exercise.wrong_solutions():
        if not _WRONG_NAME.match(path.name):
            problems.append(f"wrong/{path.name} 应命名为 NN_name.py / wrong/{path.name} must be named NN_name.py")
        if not mistake(path):
            problems.append(f"wrong/{path.name} 第一行应为 '{MISTAKE_PREFIX} ...' / "
                            f"the first line of wrong/{path.name} must be '{MISTAKE_PREFIX} ...'")
    for path in exercise.right_solutions():
        if not _WRONG_NAME.match(path.name):
            problems.append(f"right/{path.name} 应命名为 NN_name.py / right/{path.name} must be named NN_name.py")
        if not mistake(path, CORRECT_PREFIX):
            problems.append(f"right/{path.name} 第一行应为 '{CORRECT_PREFIX} ...' / "
                            f"the first line of right/{path.name} must be '{CORRECT_PREFIX} ...'")
    try:
        exercise.hints()
    except ExerciseError as exc:
        problems.append(f"{exc.zh} / {exc.en}")
    return problems


def layout_warnings(exercise: Exercise) -> list[str]:
    """Parts every exercise will need but that may still be missing while they are written (warnings
    for now: fewer than MIN_WRONG wrong solutions, no hints.md)."""
    warnings = []
    count = len(exercise.wrong_solutions())
    if count < MIN_WRONG:
        warnings.append(f"wrong/ 里只有 {count} 个错误解法（至少需要 {MIN_WRONG} 个）/ "
                        f"wrong/ holds {count} wrong solutions (at least {MIN_WRONG} are needed)")
    if not (exercise.path / "hints.md").is_file():
        warnings.append("缺少 hints.md / hints.md is missing")
    return warnings
