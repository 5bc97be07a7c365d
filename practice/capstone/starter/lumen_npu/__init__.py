"""Lumen NPU: an out-of-tree platform plugin for mini_platform.

Lumen is an invented accelerator: its driver creates ``/dev/lumen0``, ``/dev/lumen1``, ... (and the
control node ``/dev/lumen_ctl``), and it computes on the CPU underneath. Everything else is what a
vendor writes: the detector and the two registrations here (kernels, custom-op layers), the platform class
(``platform.py``), the runtime's device module (``device.py``), the kernel backend (``ops/``), the attention
backend (``attention.py``) and the custom ops with the layer that calls them (``custom_ops.py``, ``layers.py``).
``pyproject.toml`` declares the entry points.

This module is imported to run the detector, so it imports neither torch nor the Lumen runtime.
"""
from __future__ import annotations

import os
import re  # noqa: F401
from pathlib import Path

# Where the detector looks for /dev ("/" unless set; tests point it at a fake tree).
DEVICE_ROOT_ENV = "LUMEN_DEVICE_ROOT"
# TODO(stage 260): a pattern for device node names: lumen0, lumen12, ... but not lumen_ctl (the control node).


def device_root() -> Path:
    return Path(os.environ.get(DEVICE_ROOT_ENV) or "/")


def device_count() -> int:
    """Lumen devices the driver exposes: ``<root>/dev/lumen<N>`` nodes. Reads the directory only."""
    # TODO(stage 260): count the entries of <root>/dev named lumen<N> (whole name; files and character
    #                  devices alike), listed again at every call; no dev folder (missing, or a file) means 0.
    raise NotImplementedError("lumen_npu.device_count")


def register() -> str | None:
    """Platform detector (entry point ``lumen``): the platform's qualified name when a device exists."""
    # TODO(stage 260): the qualified name of the platform class when a device node exists, else None
    #                  (MINI_PLATFORM=lumen selects the platform; it is no device).
    return None


def register_kernels() -> None:
    """General plugin (entry point ``lumen_kernels``): make ``lumen_npu.ops`` the ``lumen`` kernel backend."""
    # TODO(stage 262): register the package lumen_npu.ops as the kernel backend "lumen" (mini_platform.ops).


def register_ops() -> None:
    """General plugin (entry point ``lumen_ops``): on the Lumen platform, the engine's ``RMSNorm`` becomes
    ``LumenRMSNorm`` (``CustomOp.register_oot``), whose forward calls Lumen's custom ops."""
    # TODO(stage 265): only when the current platform is Lumen (current_platform.device_name == "lumen"): make
    #                  lumen_npu.layers.LumenRMSNorm replace the in-tree op whose class is named "RMSNorm"
    #                  (mini_platform.model.custom_op.CustomOp.register_oot). Import torch-using modules inside.
