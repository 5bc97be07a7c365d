"""Exercise 180: resolve the platform from detectors and env; forward device APIs.

Fill in the TODOs. Keep the names: the tests import them.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

Detector = Callable[[], Optional[str]]

UNSPECIFIED = "mini_platform.platforms.interface.UnspecifiedPlatform"


class PlatformResolutionError(RuntimeError):
    """The platform cannot be decided: ambiguous, unknown or unavailable."""


def resolve_platform(builtin: Mapping[str, Detector], oot: Mapping[str, Detector], env: Mapping[str, str]) -> str:
    """Return the qualified class name of the platform to use.

    builtin, oot: name -> detector (a no-argument callable returning a qualified name or None).
    env: a mapping like os.environ.

    1. MINI_PLATFORM (not blank) selects one name: oot first, then builtin; call only that detector.
       Unknown name / None / exception -> PlatformResolutionError naming it.
    2. MINI_PLATFORM_TARGET_DEVICE == "cpu" -> call only builtin["cpu"]; None -> PlatformResolutionError.
    3. MINI_PLATFORM_PLUGINS present -> only the oot names it lists are considered (comma-separated,
       stripped, empty items ignored; empty value allows none). Never call the others.
    4. Call each considered detector at most once; an exception means inactive.
    5. Exactly one active oot plugin wins; two or more -> PlatformResolutionError naming all of them.
    6. Otherwise the same among builtin; none active -> UNSPECIFIED.
    """
    # TODO: rule 1 (selection)
    # TODO: rule 2 (cpu target)
    # TODO: rules 3-6
    raise NotImplementedError("resolve_platform")


# Device type -> the module unknown Platform attributes are forwarded to (torch.cuda, torch.npu, ...).
DEVICE_MODULES: dict[str, object] = {}


class Platform:
    """A platform; attributes it lacks come from its device module."""

    device_type = "cpu"

    def __getattr__(self, name: str) -> Any:
        """Called only when normal attribute lookup fails.

        - never forward a name that starts and ends with "__": raise AttributeError
        - forward to DEVICE_MODULES[self.device_type] (looked up now) when that module has the name
        - otherwise raise AttributeError naming the attribute and self.device_type
        """
        # TODO
        raise NotImplementedError("Platform.__getattr__")
