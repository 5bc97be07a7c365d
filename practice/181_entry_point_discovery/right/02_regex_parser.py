# Correct: parses entry_points.txt with regular expressions (checking for an entry before any header first), reads METADATA with email.message_from_string, uses pathlib iterdir and a list for the allow-list; own messages.
from __future__ import annotations

import email
import importlib
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EntryPoint:
    name: str
    value: str
    group: str
    dist: str
    version: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        return self.value.partition(":")[2].strip()


HEADER = re.compile(r"^\[(.*)\]$")
ENTRY = re.compile(r"^([^=]*)=(.*)$")
EXTRAS = re.compile(r"\s*\[.*?\]\s*$")


def parse_entry_points(text):
    groups = {}
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        header = HEADER.match(line)
        if header:
            current = groups.setdefault(header.group(1).strip(), {})
            continue
        entry = ENTRY.match(line)
        if entry is None:
            raise ValueError("line %d is not 'name = value': %r" % (number, line))
        if current is None:
            raise ValueError("line %d: entry outside a [group]" % number)
        name = entry.group(1).strip()
        value = EXTRAS.sub("", entry.group(2).strip())
        if not name or not value:
            raise ValueError("line %d: empty name or value" % number)
        if name in current:
            raise ValueError("line %d: %s again" % (number, name))
        current[name] = value
    return groups


def discover(site_dir, group):
    found = {}
    dirs = sorted((p for p in Path(site_dir).iterdir() if p.name.endswith(".dist-info") and p.is_dir()),
                  key=lambda p: p.name)
    for info in dirs:
        try:
            meta = email.message_from_string((info / "METADATA").read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        dist = meta["Name"]
        if not dist:
            continue
        version = meta["Version"] or ""
        eps = info / "entry_points.txt"
        if not eps.exists():
            continue
        try:
            parsed = parse_entry_points(eps.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{info.name} has a broken entry_points.txt ({exc})")
        for name, value in parsed.get(group, {}).items():
            other = found.get(name)
            if other is not None:
                raise ValueError(f"conflict for {name!r}: {other.dist!r} vs {dist!r}")
            found[name] = EntryPoint(name, value, group, dist, version)
    return found


def load(ep):
    obj = importlib.import_module(ep.module)
    for part in ep.attr.split(".") if ep.attr else []:
        obj = getattr(obj, part)
    return obj


def load_group(site_dir, group, allowed=None):
    wanted = None if allowed is None else list(allowed)
    loaded, failed = {}, {}
    for name, ep in discover(site_dir, group).items():
        if wanted is None or name in wanted:
            try:
                obj = load(ep)
            except Exception as exc:
                failed[name] = "{}: {}".format(exc.__class__.__name__, exc)
            else:
                loaded[name] = obj
    return loaded, failed
