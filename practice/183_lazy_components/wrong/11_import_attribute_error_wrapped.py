# Mistake: Imports and takes the attribute inside one try that turns any AttributeError into an ImportError, so an AttributeError raised while the module runs is wrapped instead of propagating unchanged.
"""Exercise 183 (a wrong solution): components named by qualified-name strings, imported on first use."""
from __future__ import annotations

import importlib
import os
import re
from typing import Any, Mapping, Optional

_ROLE_METHOD = re.compile(r"get_(\w+)_cls")


def _is_qualname(text: str) -> bool:
    parts = text.split(".")
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def resolve_obj_by_qualname(qualname: str) -> Any:
    """Import ``"package.module.Name"`` and return ``Name``; errors name what is missing."""
    if not _is_qualname(qualname):
        raise ValueError(f"{qualname!r} is not a qualified name of the form 'package.module.Name'")
    module_name, _, attr = qualname.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except AttributeError:
        raise ImportError(f"module {module_name!r} has no attribute {attr!r} (wanted {qualname!r})") from None
    except ImportError as exc:
        raise ImportError(f"cannot import module {module_name!r} for {qualname!r}: {exc}") from exc


class Components:
    """The component classes a platform names, each imported when first asked for.

    Every ``get_<role>_cls()`` method of ``platform`` names the class of one role; the variable
    ``MINI_PLATFORM_<ROLE>`` overrides it. Names are checked now, modules imported on ``get``.
    """

    def __init__(self, platform: Any, env: Optional[Mapping[str, str]] = None) -> None:
        env = os.environ if env is None else env
        self._qualnames: dict[str, str] = {}
        self._loaded: dict[str, Any] = {}
        for method in dir(platform):
            match = _ROLE_METHOD.fullmatch(method)
            if match is None:
                continue
            role = match.group(1)
            qualname = getattr(platform, method)()
            if not isinstance(qualname, str):
                raise TypeError(f"{method}() returned {qualname!r}; it must return a qualified class name string")
            variable = f"MINI_PLATFORM_{role.upper()}"
            override = env.get(variable, "").strip()
            source = variable if override else f"{method}()"
            qualname = override or qualname
            if not _is_qualname(qualname):
                raise ValueError(f"{source} gives {qualname!r} for the {role!r} component, "
                                 "which is not a qualified name of the form 'package.module.Name'")
            self._qualnames[role] = qualname

    def roles(self) -> list[str]:
        return sorted(self._qualnames)

    def qualname(self, role: str) -> str:
        self._check(role)
        return self._qualnames[role]

    def get(self, role: str) -> Any:
        """The component class of ``role``, imported on the first call and cached."""
        self._check(role)
        if role not in self._loaded:
            self._loaded[role] = resolve_obj_by_qualname(self._qualnames[role])
        return self._loaded[role]

    def loaded(self) -> list[str]:
        return sorted(self._loaded)

    def _check(self, role: str) -> None:
        if role not in self._qualnames:
            raise KeyError(f"no component role {role!r}; known roles: {', '.join(self.roles()) or 'none'}")
