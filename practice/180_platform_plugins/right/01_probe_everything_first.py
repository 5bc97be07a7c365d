# Correct: probes every considered plugin and every built-in up front in one loop, then decides from the two result dicts; own error wording, casefold() for the target, a sentinel default in __getattr__.
from __future__ import annotations

from typing import Any

UNSPECIFIED = "mini_platform.platforms.interface.UnspecifiedPlatform"


class PlatformResolutionError(RuntimeError):
    pass


def _safe(detector):
    try:
        return detector()
    except Exception:
        return None


def resolve_platform(builtin, oot, env):
    name = (env.get("MINI_PLATFORM") or "").strip()
    if name:
        table = oot if name in oot else builtin
        if name not in table:
            raise PlatformResolutionError(f"unknown platform {name}")
        try:
            result = table[name]()
        except Exception as exc:
            raise PlatformResolutionError(f"{name} failed: {exc!r}") from exc
        if result is None:
            raise PlatformResolutionError(f"{name} is not usable here")
        return result
    if (env.get("MINI_PLATFORM_TARGET_DEVICE") or "").strip().casefold() == "cpu":
        result = _safe(builtin["cpu"])
        if result is None:
            raise PlatformResolutionError("cpu requested, cpu unavailable")
        return result
    allowed = None
    if "MINI_PLATFORM_PLUGINS" in env:
        allowed = [p.strip() for p in env["MINI_PLATFORM_PLUGINS"].split(",") if p.strip()]
    results = {"oot": {}, "builtin": {}}
    for kind, table in (("oot", oot), ("builtin", builtin)):
        for n, det in table.items():
            if kind == "oot" and allowed is not None and n not in allowed:
                continue
            r = _safe(det)
            if r is not None:
                results[kind][n] = r
    for kind in ("oot", "builtin"):
        found = results[kind]
        if len(found) >= 2:
            raise PlatformResolutionError("ambiguous: " + " / ".join(found))
        if len(found) == 1:
            return list(found.values())[0]
    return UNSPECIFIED


DEVICE_MODULES: dict = {}
_MISSING = object()


class Platform:
    device_type = "cpu"

    def __getattr__(self, name: str) -> Any:
        if name[:2] == "__" == name[-2:]:
            raise AttributeError(name)
        value = getattr(DEVICE_MODULES.get(self.device_type), name, _MISSING) \
            if self.device_type in DEVICE_MODULES else _MISSING
        if value is _MISSING:
            raise AttributeError(f"no {name} on platform for device {self.device_type}")
        return value
