# Mistake: Records the reason as repr(exc), e.g. ModuleNotFoundError("No module named 'x'"), not 'Type: message'.
"""Exercise 181 (a wrong solution): list a group's entry points from *.dist-info metadata, then load them."""
from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any, Iterable, Optional, Union


@dataclass(frozen=True)
class EntryPoint:
    """One entry point, as written in a distribution's entry_points.txt."""

    name: str
    value: str      # "package.module:attr.path" or "package.module" (extras removed)
    group: str
    dist: str       # the distribution's Name from METADATA
    version: str    # the distribution's Version from METADATA

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        """The attribute path after the colon; "" when the value names a module."""
        return self.value.partition(":")[2].strip()


_EXTRAS = re.compile(r"\s*\[[^\]]*\]$")


def parse_entry_points(text: str) -> dict[str, dict[str, str]]:
    """Parse entry_points.txt: group -> {name: value}."""
    groups: dict[str, dict[str, str]] = {}
    current: Optional[dict[str, str]] = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = groups.setdefault(line[1:-1].strip(), {})
            continue
        name, sep, value = line.partition("=")
        name, value = name.strip(), _EXTRAS.sub("", value.strip())
        if not sep or not name or not value:
            raise ValueError(f"line {number}: expected 'name = module:attr', got {raw!r}")
        if current is None:
            raise ValueError(f"line {number}: entry {name!r} comes before any [group] header")
        if name in current:
            raise ValueError(f"line {number}: entry {name!r} appears twice in its group")
        current[name] = value
    return groups


def _read_metadata(path: Path) -> tuple[Optional[str], Optional[str]]:
    headers = HeaderParser().parsestr(path.read_text(encoding="utf-8"))
    return headers.get("Name"), headers.get("Version")


def discover(site_dir: Union[str, os.PathLike], group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` in the ``*.dist-info`` directories of ``site_dir``. Imports nothing."""
    found: dict[str, EntryPoint] = {}
    for info in sorted(Path(site_dir).glob("*.dist-info")):
        metadata = info / "METADATA"
        if not info.is_dir() or not metadata.is_file():
            continue
        dist, version = _read_metadata(metadata)
        if not dist:
            continue
        entry_points = info / "entry_points.txt"
        if not entry_points.is_file():
            continue
        try:
            groups = parse_entry_points(entry_points.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{entry_points}: {exc}") from exc
        for name, value in groups.get(group, {}).items():
            if name in found:
                first = found[name]
                raise ValueError(f"entry point {name!r} of group {group!r} is provided by both "
                                 f"{first.dist} {first.version} and {dist} {version}; uninstall one of them")
            found[name] = EntryPoint(name, value, group, dist, version or "")
    return found


def load(ep: EntryPoint) -> Any:
    """Import the entry point's module and walk its attribute path."""
    obj = importlib.import_module(ep.module)
    for part in filter(None, ep.attr.split(".")):
        obj = getattr(obj, part)
    return obj


def load_group(site_dir: Union[str, os.PathLike], group: str,
               allowed: Optional[Iterable[str]] = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Load the allowed entry points of ``group``; a broken one goes into ``failed`` with its reason."""
    allowed = None if allowed is None else set(allowed)
    loaded: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for name, ep in sorted(discover(site_dir, group).items()):
        if allowed is not None and name not in allowed:
            continue
        try:
            loaded[name] = load(ep)
        except Exception as exc:  # a broken plugin must not break start-up
            failed[name] = repr(exc)
    return loaded, failed
