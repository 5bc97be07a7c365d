"""Small helpers shared across floors."""
from __future__ import annotations

import importlib
from typing import Any


def resolve_obj_by_qualname(qualname: str) -> Any:
    """Import ``"package.module.Name"`` and return ``Name``, with an error that names what is missing.

    Callers look it up as ``utils.resolve_obj_by_qualname`` at call time, so a replacement set on this
    module (exercise 183's solution, run by ``practice/judge.py engine``) takes effect at once."""
    parts = qualname.split(".") if isinstance(qualname, str) else []
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        raise ValueError(f"{qualname!r} is not a qualified name of the form 'package.module.Name'")
    module_name, _, attr = qualname.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import module {module_name!r} for {qualname!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"module {module_name!r} has no attribute {attr!r} (wanted {qualname!r})") from None
