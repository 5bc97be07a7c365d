"""What ``judge.py engine`` computed before and need not compute again, stored by the content it came from.

Two kinds of entry under the cache folder (``sandbox.cache_folder("engine")``), each named by the sha256 of everything its
result depends on, so that a change to any of it is a new name and nothing stale is ever read:

- ``checkpoint/<key>/``: a tiny checkpoint and the greedy tokens transformers generated for the standard
  requests (key: the architecture and its seed, the prompts and token count, the source of
  mini_platform.model, the versions of Python, torch and transformers);
- ``run/<key>.json``: one engine run of the standard load that finished: its steps, outputs, statistics and
  the calls per part (key: the run's definition, the checkpoint's key, the source of the whole mini_platform
  package and of engine_run.py, the versions, and for each learner's part that the all-reference engine
  calls in that run its exercise, paths and the sha256 of its file). A run that raised is not stored.

So a second ``judge.py engine`` with one changed file runs again only the engines that file's parts are in
play in; everything else, transformers included, is read back. The learner's file paths are stored as
placeholders (a moved practice folder still hits). ``judge.py engine --no-cache`` reads and writes nothing.
The cache holds results of code that ran in the judge's child; it is this machine's own, like the judge
state file, and is not a defence against a submission that forges entries.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

KEEP_RUNS = 400        # run entries kept (the oldest are removed beyond it)
KEEP_CHECKPOINTS = 12  # checkpoint folders kept


def digest(*parts: Any) -> str:
    """sha256 of the JSON of ``parts`` (sorted keys)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def tree_digest(root: Path, suffixes: Iterable[str] = (".py",)) -> str:
    """sha256 over the relative paths and bytes of the files under ``root`` with these suffixes."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in tuple(suffixes) and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def versions() -> dict[str, str]:
    """The versions the results depend on (of the packages already imported, or importable)."""
    import importlib.metadata

    found = {"python": sys.version.split()[0]}
    for name in ("torch", "transformers", "triton", "safetensors"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = ""
    return found


class Cache:
    """The entries under ``root``; ``Cache(None)`` reads and writes nothing."""

    def __init__(self, root: str | os.PathLike | None) -> None:
        self.root = Path(root) if root else None
        self.hits = self.misses = 0

    # ---- checkpoints

    def checkpoint(self, key: str) -> Path | None:
        """The folder of a stored checkpoint (with its ``generated.json``), or None."""
        if self.root is None:
            return None
        path = self.root / "checkpoint" / key
        return path if (path / "generated.json").is_file() else None

    def store_checkpoint(self, key: str, built: Path, generated: dict) -> Path:
        """Move the checkpoint folder ``built`` into the cache with ``generated``; returns where it is now
        (``built`` itself without a cache, or when another judge stored the same key first)."""
        if self.root is None:
            return built
        (built / "generated.json").write_text(json.dumps(generated), encoding="utf-8")
        target = self.root / "checkpoint" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=target.parent))
        shutil.copytree(built, staging, dirs_exist_ok=True)
        try:
            os.replace(staging, target)
        except OSError:   # stored meanwhile by another run: the same content
            shutil.rmtree(staging, ignore_errors=True)
        self._prune(target.parent, KEEP_CHECKPOINTS)
        return target if self.checkpoint(key) else built

    # ---- engine runs

    def run(self, key: str, files: dict[str, str]) -> dict | None:
        """A stored run result with the learner's file placeholders replaced by ``files`` (exercise -> path)."""
        if self.root is None:
            return None
        path = self.root / "run" / f"{key}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            self.misses += 1
            return None
        for exercise, file in files.items():
            text = text.replace(_placeholder(exercise), json.dumps(file)[1:-1])
        self.hits += 1
        return json.loads(text)

    def store_run(self, key: str, result: dict, files: dict[str, str]) -> None:
        if self.root is None:
            return
        text = json.dumps(result)
        for exercise, file in files.items():
            text = text.replace(json.dumps(file)[1:-1], _placeholder(exercise))
        path = self.root / "run" / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f".{path.name}.{os.getpid()}")
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, path)
        self._prune(path.parent, KEEP_RUNS)

    @staticmethod
    def _prune(where: Path, keep: int) -> None:
        entries = sorted((p for p in where.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
        for old in entries[:max(0, len(entries) - keep)]:
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink(missing_ok=True)


def _placeholder(exercise: str) -> str:
    return f"<<learner-file:{exercise}>>"
