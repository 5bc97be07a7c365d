"""The learner's local progress: workspace files and the state file.

``practice/workspace/<NNN_slug>.py`` is the learner's copy of each starter. ``practice/.judge_state.json``
(git-ignored) keeps, per exercise id, the last verdict of its workspace file at the top level
(``status``, ``passed``, ``total``, ``file``, ``at``, ``sha256`` of the content judged) and beside it::

    "best":  {"status", "passed", "total", "at"}   # accepted beats everything, then most tests passed;
                                                   # a later failing run never replaces an accepted one
    "runs":  int      # judgements of the workspace file
    "failed_runs": int  # of those, not accepted
    "hints": int      # how many hints ``judge.py hint ID`` has shown

``MINI_PLATFORM_WORKSPACE`` names another folder for both (the state file then lies inside it, as
``.judge_state.json``): the site build points it at an empty temporary folder, so that the chapters it
publishes show nobody's files or verdicts.
"""
from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime
from pathlib import Path

from .exercises import Exercise

WORKSPACE_ENV = "MINI_PLATFORM_WORKSPACE"


def workspace_dir(root: Path) -> Path:
    """The learner's folder: ``$MINI_PLATFORM_WORKSPACE`` when set, else ``root/workspace``."""
    override = os.environ.get(WORKSPACE_ENV)
    return Path(override).resolve() if override else root / "workspace"


class Progress:
    """Workspace files and state under one practice folder (or the folder ``MINI_PLATFORM_WORKSPACE`` names)."""

    def __init__(self, root: Path) -> None:
        self.workspace = workspace_dir(root)
        # with MINI_PLATFORM_WORKSPACE the state goes into that folder too, never beside a temporary one
        self.state_file = (self.workspace if os.environ.get(WORKSPACE_ENV) else root) / ".judge_state.json"

    def workspace_file(self, exercise: Exercise) -> Path:
        return self.workspace / f"{exercise.name}.py"

    def ensure_workspace(self, exercise: Exercise) -> bool:
        """Create the workspace file from the starter if it does not exist; True when created."""
        target = self.workspace_file(exercise)
        if target.exists():
            return False
        self.workspace.mkdir(parents=True, exist_ok=True)
        try:
            with open(target, "x", encoding="utf-8") as f:   # "x": never overwrite
                f.write(exercise.file("starter.py").read_text(encoding="utf-8"))
        except FileExistsError:
            return False
        return True

    def load(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def entry(self, exercise_id: int) -> dict:
        entry = self.load().get(str(exercise_id))
        return entry if isinstance(entry, dict) else {}

    def _update(self, exercise_id: int, change) -> dict:
        state = self.load()
        entry = state.get(str(exercise_id))
        entry = change(dict(entry) if isinstance(entry, dict) else {})
        state[str(exercise_id)] = entry
        tmp = self.state_file.with_name(f"{self.state_file.name}.{os.getpid()}.tmp")   # two judges at once
        tmp.write_text(json.dumps(state, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.state_file)
        return entry

    def record(self, exercise: Exercise, verdict: dict, file: Path, digest: str | None = None) -> dict:
        """Remember ``verdict`` as the last one of the workspace file (``digest``: the sha256 of the
        content that was judged, read now when not given); keep the best one."""
        now = datetime.now().isoformat(timespec="seconds")
        last = {"status": verdict["status"], "passed": verdict["counts"]["passed"],
                "total": verdict["counts"]["total"], "at": now}
        sha256 = digest or file_digest(file)

        def change(entry: dict) -> dict:
            best = entry.get("best") or (_last(entry) if entry.get("status") else None)
            if best is None or better(last, best):
                best = last
            accepted = verdict["status"] == "accepted"
            return {**entry, **last, "file": str(file), "sha256": sha256, "best": best, "runs": entry.get("runs", 0) + 1,
                    "failed_runs": entry.get("failed_runs", 0) + (not accepted)}
        return self._update(exercise.id, change)

    def hints_shown(self, exercise: Exercise) -> int:
        return int(self.entry(exercise.id).get("hints", 0))

    def set_hints_shown(self, exercise: Exercise, count: int) -> None:
        self._update(exercise.id, lambda entry: {**entry, "hints": count})


def file_digest(path: Path) -> str:
    """The sha256 of a file's bytes ("" when it cannot be read)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _last(entry: dict) -> dict:
    return {key: entry.get(key) for key in ("status", "passed", "total", "at")}


def better(a: dict, b: dict) -> bool:
    """Whether verdict summary ``a`` beats ``b``: accepted first, then more tests passed."""
    return (a["status"] == "accepted", a.get("passed") or 0) > (b.get("status") == "accepted", b.get("passed") or 0)


def solved(entry: dict) -> bool:
    best = entry.get("best") or (_last(entry) if entry.get("status") else {})
    return best.get("status") == "accepted"
