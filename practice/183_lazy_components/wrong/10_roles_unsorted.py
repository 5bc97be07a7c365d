# Mistake: Returns the roles in the order the class hierarchy lists them (own class first), not sorted.
from __future__ import annotations

import importlib
import os

_MISSING = object()


def _valid(name):
    parts = name.split(".")
    return len(parts) > 1 and all(p.isidentifier() for p in parts)


def resolve_obj_by_qualname(qualname):
    if not _valid(qualname):
        raise ValueError(f"expected 'package.module.Name', got {qualname!r}")
    idx = qualname.rindex(".")
    module_name, attr = qualname[:idx], qualname[idx + 1:]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"importing {module_name} (for {qualname}) failed: {exc}") from exc
    obj = getattr(module, attr, _MISSING)
    if obj is _MISSING:
        raise ImportError(f"{module_name} defines no {attr}")
    return obj


class Components:
    def __init__(self, platform, env=None):
        env = os.environ if env is None else env
        cls = platform if isinstance(platform, type) else type(platform)
        methods = set()
        for klass in cls.__mro__:
            for attr in vars(klass):
                if attr.startswith("get_") and attr.endswith("_cls") and len(attr) > 8:
                    methods.add(attr)
        from_methods = {}
        for method in [m for k in cls.__mro__ for m in vars(k) if m in methods]:
            value = getattr(platform, method)()
            if not isinstance(value, str):
                raise TypeError(f"{method} returned {type(value).__name__}, expected a qualified-name str")
            from_methods[method[4:-4]] = (value, method)
        self._names = {}
        for role, (value, source) in from_methods.items():
            variable = "MINI_PLATFORM_" + role.upper()
            override = (env.get(variable) or "").strip()
            if override:
                value, source = override, variable
            if not _valid(value):
                raise ValueError(f"{source}: {value!r} is not a valid name for role {role}")
            self._names[role] = value
        self._objects = {}
        self._done = set()

    def roles(self):
        return list(self._names)

    def qualname(self, role):
        if role not in self._names:
            raise KeyError(role)
        return self._names[role]

    def get(self, role):
        name = self.qualname(role)
        if role in self._done:
            return self._objects[role]
        obj = resolve_obj_by_qualname(name)
        self._objects[role] = obj
        self._done.add(role)
        return obj

    def loaded(self):
        return sorted(self._done)
