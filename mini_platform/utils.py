"""Small helpers shared across floors."""
from __future__ import annotations

import importlib
from typing import Any


def resolve_obj_by_qualname(qualname: str) -> Any:
    """Import ``"package.module.Name"`` and return ``Name``, with an error that names what is missing."""
    module_name, _, attr = qualname.rpartition(".")
    if not module_name:
        raise ValueError(f"{qualname!r} is not a qualified name of the form 'package.module.Name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import module {module_name!r} for {qualname!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"module {module_name!r} has no attribute {attr!r} (wanted {qualname!r})") from None
