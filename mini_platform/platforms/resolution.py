"""Which platform this process runs on: the resolution rules of vLLM, with SGLang's selection variable.

The rules, in order (``env`` is a mapping like ``os.environ``):

1. ``MINI_PLATFORM`` names one plugin: it is looked up among the out-of-tree plugins, then the
   built-ins, and only its detector runs (so no other plugin module is imported). An unknown name, a
   detector returning None or raising is an error.
2. ``MINI_PLATFORM_TARGET_DEVICE=cpu`` runs only the built-in ``cpu`` detector.
3. ``MINI_PLATFORM_PLUGINS``, when present, limits the out-of-tree plugins considered to the names it
   lists; the others are never called.
4. Each considered detector runs at most once; one that raises counts as inactive (with a warning).
5. Exactly one active out-of-tree plugin wins, even over active built-ins; two or more is an error.
6. Otherwise the same among built-ins; none active gives :class:`UnspecifiedPlatform`.
"""
from __future__ import annotations

import logging
from typing import Callable, Mapping

from .. import envs

logger = logging.getLogger(__name__)

Detector = Callable[[], "str | None"]
UNSPECIFIED = "mini_platform.platforms.interface.UnspecifiedPlatform"


class PlatformResolutionError(RuntimeError):
    """The platform cannot be decided: ambiguous, unknown or unavailable."""


def _detect(name: str, detector: Detector) -> str | None:
    try:
        return detector()
    except Exception as exc:
        logger.warning("Platform plugin %s raised %s while detecting and is treated as unavailable: %s",
                       name, type(exc).__name__, exc)
        return None


def _select(name: str, builtin: Mapping[str, Detector], oot: Mapping[str, Detector]) -> str:
    source = oot if name in oot else builtin if name in builtin else None
    if source is None:
        known = sorted(set(oot) | set(builtin))
        raise PlatformResolutionError(
            f"{envs.SELECT}={name!r} names no platform plugin; installed: {', '.join(known) or 'none'}"
        )
    try:
        qualname = source[name]()
    except Exception as exc:
        raise PlatformResolutionError(
            f"platform plugin {name!r} selected by {envs.SELECT} raised {type(exc).__name__}: {exc}"
        ) from exc
    if qualname is None:
        raise PlatformResolutionError(
            f"platform plugin {name!r} selected by {envs.SELECT} is not available on this machine"
        )
    logger.info("Platform plugin %s is selected by %s", name, envs.SELECT)
    return qualname


def _only_active(kind: str, detectors: Mapping[str, Detector]) -> tuple[str, str] | None:
    active = {}
    for name, detector in detectors.items():
        qualname = _detect(name, detector)
        if qualname is not None:
            active[name] = qualname
    if len(active) > 1:
        raise PlatformResolutionError(
            f"only one {kind} platform can be active, but these are: {', '.join(sorted(active))}; "
            f"choose one with {envs.SELECT}=<name>"
        )
    return next(iter(active.items()), None)


def resolve_platform(builtin: Mapping[str, Detector], oot: Mapping[str, Detector], env: Mapping[str, str]) -> str:
    """The qualified class name of the platform to use (rules in the module docstring); exercise 180."""
    selected = envs.selected_platform(env)
    if selected:
        return _select(selected, builtin, oot)

    if envs.target_device(env) == "cpu":
        qualname = _detect("cpu", builtin["cpu"]) if "cpu" in builtin else None
        if qualname is None:
            raise PlatformResolutionError(f"{envs.TARGET_DEVICE}=cpu but the cpu platform is not available")
        return qualname

    allowed = envs.plugin_allow_list(env)
    considered = {name: det for name, det in oot.items() if allowed is None or name in allowed}
    if len(considered) < len(oot):
        logger.info("Platform plugins not listed in %s are skipped: %s",
                    envs.PLUGINS, ", ".join(sorted(set(oot) - set(considered))))
    winner = _only_active("out-of-tree", considered)
    if winner:
        logger.info("Platform plugin %s is activated", winner[0])
        return winner[1]
    winner = _only_active("built-in", builtin)
    if winner:
        logger.info("Automatically detected platform %s.", winner[0])
        return winner[1]
    logger.warning("No platform detected; current_platform is UnspecifiedPlatform")
    return UNSPECIFIED
