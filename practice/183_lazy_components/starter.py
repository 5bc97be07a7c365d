"""Exercise 183: components named by qualified-name strings, imported on first use.

Fill in the TODOs. Keep the names: the tests import them. Standard library only.
"""
from __future__ import annotations

import importlib  # noqa: F401
import os  # noqa: F401
from typing import Any, Mapping, Optional


def resolve_obj_by_qualname(qualname: str) -> Any:
    """Import "package.module.Name" and return Name (the last dot separates module and attribute).

    - not dotted identifiers with at least two parts -> ValueError
    - the module cannot be imported (ImportError) -> ImportError naming the qualname, with the original
      message in it and the original as __cause__
    - the module lacks the attribute -> ImportError naming the module and the attribute
    - any other exception raised while importing propagates unchanged
    """
    # TODO
    raise NotImplementedError("resolve_obj_by_qualname")


class Components:
    """The component classes a platform names, each imported when first asked for."""

    def __init__(self, platform: Any, env: Optional[Mapping[str, str]] = None) -> None:
        """Collect role -> qualified name from platform's get_<role>_cls() methods. Import nothing.

        env (os.environ when None): a non-blank MINI_PLATFORM_<ROLE> overrides a role's name.
        A method returning a non-str -> TypeError; a malformed name -> ValueError naming the role
        and where the name came from (the method or the variable).
        """
        # TODO
        raise NotImplementedError("Components.__init__")

    def roles(self) -> list[str]:
        """All roles, sorted."""
        # TODO
        raise NotImplementedError

    def qualname(self, role: str) -> str:
        """The qualified name chosen for role; KeyError naming an unknown role."""
        # TODO
        raise NotImplementedError

    def get(self, role: str) -> Any:
        """The component of role: imported on the first successful call, then cached.

        Unknown role -> KeyError naming it. A failure is not cached: the next call tries again.
        """
        # TODO
        raise NotImplementedError

    def loaded(self) -> list[str]:
        """Roles whose component has been imported, sorted."""
        # TODO
        raise NotImplementedError
