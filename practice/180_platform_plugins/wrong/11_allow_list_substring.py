# Mistake: Tests a plugin against the allow-list with a substring check on the raw value, so 'xpu' is allowed by 'xpu2'.
"""Exercise 180 (a wrong solution): resolve the platform from detectors and env; forward device APIs."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

Detector = Callable[[], Optional[str]]

UNSPECIFIED = "mini_platform.platforms.interface.UnspecifiedPlatform"


class PlatformResolutionError(RuntimeError):
    """The platform cannot be decided: ambiguous, unknown or unavailable."""


def _probe(detector: Detector) -> Optional[str]:
    """Call a detector once; one that raises counts as inactive."""
    try:
        return detector()
    except Exception:
        return None


def _select(name: str, builtin: Mapping[str, Detector], oot: Mapping[str, Detector]) -> str:
    detectors = oot if name in oot else builtin if name in builtin else None
    if detectors is None:
        known = ", ".join(sorted(set(oot) | set(builtin))) or "none"
        raise PlatformResolutionError(f"MINI_PLATFORM={name!r} names no platform plugin; installed: {known}")
    try:
        qualname = detectors[name]()
    except Exception as exc:
        raise PlatformResolutionError(
            f"platform plugin {name!r} selected by MINI_PLATFORM raised {type(exc).__name__}: {exc}"
        ) from exc
    if qualname is None:
        raise PlatformResolutionError(f"platform plugin {name!r} selected by MINI_PLATFORM is not available")
    return qualname


def _only_active(kind: str, detectors: Mapping[str, Detector]) -> Optional[str]:
    active = {}
    for name, detector in detectors.items():
        qualname = _probe(detector)
        if qualname is not None:
            active[name] = qualname
    if len(active) > 1:
        raise PlatformResolutionError(
            f"only one {kind} platform can be active, but these are: {', '.join(sorted(active))}; "
            "choose one with MINI_PLATFORM=<name>"
        )
    return next(iter(active.values()), None)


def resolve_platform(builtin: Mapping[str, Detector], oot: Mapping[str, Detector], env: Mapping[str, str]) -> str:
    """The qualified class name of the platform to use (rules 1-6 of the statement)."""
    selected = env.get("MINI_PLATFORM", "").strip()
    if selected:
        return _select(selected, builtin, oot)

    if env.get("MINI_PLATFORM_TARGET_DEVICE", "").strip().lower() == "cpu":
        qualname = _probe(builtin["cpu"])
        if qualname is None:
            raise PlatformResolutionError("MINI_PLATFORM_TARGET_DEVICE=cpu but the cpu platform is not available")
        return qualname

    raw = env.get("MINI_PLATFORM_PLUGINS")
    if raw is not None:
        oot = {name: detector for name, detector in oot.items() if name in raw}

    for kind, detectors in (("out-of-tree", oot), ("built-in", builtin)):
        qualname = _only_active(kind, detectors)
        if qualname is not None:
            return qualname
    return UNSPECIFIED


# Device type -> the module unknown Platform attributes are forwarded to (torch.cuda, torch.npu, ...).
DEVICE_MODULES: dict[str, object] = {}


class Platform:
    """A platform; attributes it lacks come from its device module."""

    device_type = "cpu"

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails. Dunder names are probed by copy and pickle and must
        # never reach the device module.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if self.device_type in DEVICE_MODULES:
            try:
                return getattr(DEVICE_MODULES[self.device_type], name)
            except AttributeError:
                pass
        raise AttributeError(
            f"{type(self).__name__} has no attribute {name!r}, "
            f"and the device module of device type {self.device_type!r} has none either"
        )
