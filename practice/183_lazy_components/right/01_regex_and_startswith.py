# Correct: validates names with one full-match regular expression, finds role methods with startswith/endswith, imports with __import__ and sys.modules, and keeps one dict of role -> [qualname, object or sentinel]; own messages.
from __future__ import annotations

import os
import re
import sys

_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)+")
_UNSET = object()


def resolve_obj_by_qualname(qualname):
    if not isinstance(qualname, str) or _NAME.fullmatch(qualname) is None:
        raise ValueError("bad qualified name: %r" % (qualname,))
    module_name, attr = qualname.rsplit(".", 1)
    try:
        __import__(module_name)
    except ImportError as e:
        raise ImportError(f"{qualname}: {e}") from e
    module = sys.modules[module_name]
    if not hasattr(module, attr):
        raise ImportError(f"{attr} not found in {module_name}")
    return getattr(module, attr)


class Components:
    def __init__(self, platform, env=None):
        if env is None:
            env = os.environ
        self._table = {}
        for attr in dir(platform):
            if not (attr.startswith("get_") and attr.endswith("_cls")) or len(attr) <= len("get__cls"):
                continue
            role = attr[4:-4]
            name = getattr(platform, attr)()
            if type(name) is not str and not isinstance(name, str):
                raise TypeError(f"{attr} must return a str, not {type(name).__name__}")
            var = "MINI_PLATFORM_" + role.upper()
            where = attr
            if var in env and env[var].strip():
                name, where = env[var].strip(), var
            if _NAME.fullmatch(name) is None:
                raise ValueError(f"role {role}: {where} names {name!r}, not 'package.module.Name'")
            self._table[role] = [name, _UNSET]

    def _entry(self, role):
        try:
            return self._table[role]
        except KeyError:
            raise KeyError(f"unknown role {role}") from None

    def roles(self):
        return sorted(self._table)

    def qualname(self, role):
        return self._entry(role)[0]

    def get(self, role):
        entry = self._entry(role)
        if entry[1] is _UNSET:
            entry[1] = resolve_obj_by_qualname(entry[0])
        return entry[1]

    def loaded(self):
        return sorted(r for r, (_, obj) in self._table.items() if obj is not _UNSET)
