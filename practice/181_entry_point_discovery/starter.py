"""Exercise 181: list a group's entry points from *.dist-info metadata, then load them.

Fill in the TODOs. Keep the names: the tests import them. Standard library only.
"""
from __future__ import annotations

import importlib  # noqa: F401  (you will need it in load)
import os
from dataclasses import dataclass
from pathlib import Path  # noqa: F401
from typing import Any, Iterable, Optional, Union


@dataclass(frozen=True)
class EntryPoint:
    """One entry point, as written in a distribution's entry_points.txt (given, complete)."""

    name: str
    value: str      # "package.module:attr.path" or "package.module" (extras removed)
    group: str
    dist: str       # the distribution's Name from METADATA
    version: str    # the distribution's Version from METADATA ("" when missing)

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        """The attribute path after the colon; "" when the value names a module."""
        return self.value.partition(":")[2].strip()


def parse_entry_points(text: str) -> dict[str, dict[str, str]]:
    """Parse entry_points.txt into group -> {name: value}.

    - strip lines; skip blank lines and lines starting with '#' or ';'
    - "[group]" starts (or continues) a group; empty groups still appear
    - "name = value": split at the first '=', strip both, drop a trailing "[extras]" marker
    - ValueError containing "line N" for: no '=', empty name/value, entry before any group,
      a name repeated within a group
    """
    # TODO
    raise NotImplementedError("parse_entry_points")


def discover(site_dir: Union[str, os.PathLike], group: str) -> dict[str, EntryPoint]:
    """Entry points of ``group`` from the *.dist-info directories of ``site_dir``, by name.

    Name/Version come from the METADATA headers (not its body). Skip directories without METADATA
    or without Name. Parse errors: ValueError naming the .dist-info directory and the line.
    The same name from two distributions: ValueError naming it and both distributions.
    Must not import any plugin module.
    """
    # TODO
    raise NotImplementedError("discover")


def load(ep: EntryPoint) -> Any:
    """Import ep.module and follow the dotted ep.attr path; the module itself when attr is ""."""
    # TODO
    raise NotImplementedError("load")


def load_group(site_dir: Union[str, os.PathLike], group: str,
               allowed: Optional[Iterable[str]] = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Return (loaded, failed): name -> object, and name -> "ExceptionType: message".

    Names not in ``allowed`` (when it is not None) are neither imported nor reported.
    One broken entry point must not stop the others from loading.
    """
    # TODO
    raise NotImplementedError("load_group")
