# Correct: reads the METADATA headers by hand (line by line up to the first blank line), finds extras with rfind('['), lists directories with os.listdir, walks the attribute path with functools.reduce; own error wording.
from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass


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


def _drop_extras(value):
    if value.endswith("]") and "[" in value:
        value = value[:value.rfind("[")].rstrip()
    return value


def parse_entry_points(text):
    result = {}
    group = None
    for i, raw in enumerate(text.splitlines()):
        n = i + 1
        line = raw.strip()
        if line == "" or line.startswith(("#", ";")):
            continue
        if line[0] == "[" and line[-1] == "]":
            group = line[1:-1].strip()
            result.setdefault(group, {})
            continue
        if "=" not in line:
            raise ValueError(f"bad syntax on line {n}")
        key, value = line.split("=", 1)
        key = key.strip()
        value = _drop_extras(value.strip())
        if not key:
            raise ValueError(f"missing name on line {n}")
        if not value:
            raise ValueError(f"missing value on line {n}")
        if group is None:
            raise ValueError(f"no group yet on line {n}")
        if key in result[group]:
            raise ValueError(f"duplicate {key} on line {n}")
        result[group][key] = value
    return result


def _headers(path):
    fields = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line.strip():
                break
            if ":" in line and not line[0].isspace():
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    return fields


def discover(site_dir, group):
    out = {}
    for entry in sorted(os.listdir(site_dir)):
        folder = os.path.join(site_dir, entry)
        if not entry.endswith(".dist-info") or not os.path.isdir(folder):
            continue
        meta = os.path.join(folder, "METADATA")
        if not os.path.isfile(meta):
            continue
        fields = _headers(meta)
        if not fields.get("Name"):
            continue
        eps_file = os.path.join(folder, "entry_points.txt")
        if not os.path.exists(eps_file):
            continue
        with open(eps_file, encoding="utf-8") as f:
            text = f.read()
        try:
            parsed = parse_entry_points(text)
        except ValueError as exc:
            raise ValueError(f"in {entry}: {exc}") from None
        for name, value in parsed.get(group, {}).items():
            if name in out:
                raise ValueError(f"{name} registered by {out[name].dist} and by {fields['Name']}")
            out[name] = EntryPoint(name, value, group, fields["Name"], fields.get("Version", ""))
    return out


def load(ep):
    module = importlib.import_module(ep.module)
    if not ep.attr:
        return module
    return functools.reduce(getattr, ep.attr.split("."), module)


def load_group(site_dir, group, allowed=None):
    loaded, failed = {}, {}
    for name, ep in discover(site_dir, group).items():
        if allowed is not None and name not in allowed:
            continue
        try:
            loaded[name] = load(ep)
        except Exception as e:
            failed[name] = type(e).__name__ + ": " + str(e)
    return loaded, failed
