# Correct: a single helper for "exactly one active" shared by both kinds, the allow-list filtered with a generator while probing, selection raising from one try/except around lookup and call; hasattr() in __getattr__.
from __future__ import annotations

UNSPECIFIED = "mini_platform.platforms.interface.UnspecifiedPlatform"


class PlatformResolutionError(RuntimeError):
    """Platform cannot be resolved."""


def _winner(pairs):
    active = []
    for name, det in pairs:
        try:
            q = det()
        except Exception:
            continue
        if q is not None:
            active.append((name, q))
    if len(active) > 1:
        raise PlatformResolutionError("more than one active platform: " + repr([n for n, _ in active]))
    return active[0][1] if active else None


def resolve_platform(builtin, oot, env):
    sel = env.get("MINI_PLATFORM")
    if sel is not None and sel.strip() != "":
        sel = sel.strip()
        try:
            det = oot[sel] if sel in oot else builtin[sel]
        except KeyError:
            raise PlatformResolutionError("MINI_PLATFORM: no such plugin '" + sel + "'") from None
        try:
            q = det()
        except Exception as e:
            raise PlatformResolutionError("plugin '" + sel + "' crashed") from e
        if q is None:
            raise PlatformResolutionError("plugin '" + sel + "' inactive")
        return q
    target = env.get("MINI_PLATFORM_TARGET_DEVICE")
    if target is not None and target.strip().lower() == "cpu":
        q = _winner([("cpu", builtin["cpu"])])
        if q is None:
            raise PlatformResolutionError("the cpu platform is unavailable")
        return q
    plugins = env.get("MINI_PLATFORM_PLUGINS")
    allowed = None if plugins is None else set(filter(None, map(str.strip, plugins.split(","))))
    q = _winner((n, d) for n, d in oot.items() if allowed is None or n in allowed)
    if q is None:
        q = _winner(builtin.items())
    return UNSPECIFIED if q is None else q


DEVICE_MODULES: dict = {}


class Platform:
    device_type = "cpu"

    def __getattr__(self, name):
        dunder = name.startswith("__") and name.endswith("__")
        module = DEVICE_MODULES.get(self.device_type)
        if not dunder and module is not None and hasattr(module, name):
            return getattr(module, name)
        raise AttributeError(f"{name!r} not found (device type {self.device_type!r})")
