"""Entry-point discovery for platform plugins and general plugins.

Two groups, as in vLLM:

- ``mini_platform.platform_plugins``: each entry point is a *detector*, a no-argument function that
  returns the qualified name of a Platform class when its hardware is usable, else None.
- ``mini_platform.general_plugins``: functions run once per process (register a model, patch a
  layer, ...).

``MINI_PLATFORM_PLUGINS`` (comma-separated) is an allow-list applied to both groups. Discovery reads
the installed distributions' metadata only; a plugin module is imported when its entry point is
loaded, and a broken one is skipped with the reason logged.
"""
from __future__ import annotations

import logging
import threading
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Callable, Mapping

from . import envs

logger = logging.getLogger(__name__)

PLATFORM_PLUGINS_GROUP = "mini_platform.platform_plugins"
GENERAL_PLUGINS_GROUP = "mini_platform.general_plugins"


def discover(group: str, env: Mapping[str, str] | None = None) -> dict[str, EntryPoint]:
    """Entry points of ``group`` allowed by ``MINI_PLATFORM_PLUGINS``, by name. Imports no plugin."""
    found = {ep.name: ep for ep in entry_points(group=group)}
    if found:
        logger.info("Available plugins for group %s: %s", group,
                    ", ".join(f"{n} -> {ep.value}" for n, ep in sorted(found.items())))
    allowed = envs.plugin_allow_list(env)
    if allowed is None:
        return found
    for name in sorted(set(found) - allowed):
        logger.info("Plugin %s of group %s is not in %s; skipped", name, group, envs.PLUGINS)
    return {name: ep for name, ep in found.items() if name in allowed}


def load_plugins_by_group(group: str, env: Mapping[str, str] | None = None) -> dict[str, Callable[..., Any]]:
    """Load every allowed entry point of ``group``; one that fails to import is skipped with a warning."""
    loaded = {}
    for name, ep in discover(group, env).items():
        try:
            loaded[name] = ep.load()
        except Exception as exc:  # a broken plugin must not break start-up
            logger.warning("Failed to load plugin %s (%s): %s: %s", name, ep.value, type(exc).__name__, exc)
            continue
        logger.info("Loaded plugin %s (%s)", name, ep.value)
    return loaded


_general_lock = threading.Lock()
_general_loaded = False


def load_general_plugins(env: Mapping[str, str] | None = None) -> None:
    """Run every allowed general plugin function, once per process."""
    global _general_loaded
    with _general_lock:
        if _general_loaded:
            return
        _general_loaded = True
        for name, func in load_plugins_by_group(GENERAL_PLUGINS_GROUP, env).items():
            try:
                func()
            except Exception as exc:
                logger.warning("General plugin %s raised %s: %s", name, type(exc).__name__, exc)


def clear_general_plugins() -> None:
    """Forget that the general plugins ran, so the next :func:`load_general_plugins` runs them again
    (tests and notebooks that install a plugin after the first run)."""
    global _general_loaded
    with _general_lock:
        _general_loaded = False
