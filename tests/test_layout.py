"""The house plan (shared DESIGN §2): the package's floors, and no module importing from a floor above it.

Floor 2 is the engine and what drives the model (engine, executor/, model_runner, compilation/,
scheduler, sampler); 3 the model and the KV-cache manager; 4 the kernels, their backends (ascend/
included, an in-tree plugin) and distributed/; 5 the platform layer. ``generate`` is the command line on
top. Every import counts, also one inside a function.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mini_platform"
FLOORS = {"generate": 1, "engine": 2, "executor": 2, "model_runner": 2, "compilation": 2, "scheduler": 2,
          "sampler": 2, "model": 3, "kv_cache": 3, "ops": 4, "ascend": 4, "distributed": 4,
          "platforms": 5, "plugins": 5, "hardware": 5, "envs": 5, "utils": 5, "__init__": 5}
MODULES = sorted(PACKAGE.rglob("*.py"))


def floor(dotted: str) -> int:
    """The floor of ``dotted`` (a module path inside the package; "" is the package itself)."""
    return FLOORS[dotted.split(".")[0] or "__init__"]


def imported(path: Path, root: Path = PACKAGE) -> list[tuple[str, int]]:
    """(module inside the package at ``root``, line) for every import of the package in ``path``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            names = [node.module] if node.module else [alias.name for alias in node.names]
            found += [(".".join(base + [name]), node.lineno) for name in names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mini_platform":
            found.append((node.module.partition(".")[2], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name.partition(".")[2], node.lineno) for a in node.names if a.name.startswith("mini_platform.")]
    return found


def test_every_top_level_module_has_a_floor():
    tops = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in MODULES}
    assert tops <= set(FLOORS), f"give these a floor in FLOORS (and DESIGN §2): {sorted(tops - set(FLOORS))}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_module_imports_from_a_floor_above_it(path):
    me = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix("__init__").rstrip(".")
    above = [f"{target} (floor {floor(target)}) at line {line}" for target, line in imported(path)
             if floor(target) < floor(me)]
    assert not above, f"{me} is on floor {floor(me)} but imports from above: {above}"


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "distributed" / "bad.py"
    module.parent.mkdir()
    module.write_text("def f():\n    from ..executor.worker import WorkerConfig\n")
    assert imported(module, tmp_path) == [("executor.worker", 2)]
    assert floor("executor.worker") < floor("distributed.bad")
