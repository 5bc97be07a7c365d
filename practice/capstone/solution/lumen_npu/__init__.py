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
import re
from pathlib import Path

# Where the detector looks for /dev ("/" unless set; tests point it at a fake tree).
DEVICE_ROOT_ENV = "LUMEN_DEVICE_ROOT"
_DEVICE_NODE = re.compile(r"^lumen(\d+)$")  # lumen_ctl is the control node, not a device


def device_root() -> Path:
    return Path(os.environ.get(DEVICE_ROOT_ENV) or "/")


def device_count() -> int:
    """Lumen devices the driver exposes: ``<root>/dev/lumen<N>`` nodes. Reads the directory only."""
    try:
        return sum(1 for entry in (device_root() / "dev").iterdir() if _DEVICE_NODE.match(entry.name))
    except OSError:  # no /dev under the root: no device
        return 0


def register() -> str | None:
    """Platform detector (entry point ``lumen``): the platform's qualified name when a device exists."""
    return "lumen_npu.platform.LumenPlatform" if device_count() else None


def register_kernels() -> None:
    """General plugin (entry point ``lumen_kernels``): make ``lumen_npu.ops`` the ``lumen`` kernel backend."""
    from mini_platform import ops

    ops.register_backend("lumen", "lumen_npu.ops")


def register_ops() -> None:
    """General plugin (entry point ``lumen_ops``): on the Lumen platform, the engine's ``RMSNorm`` becomes
    ``LumenRMSNorm`` (``CustomOp.register_oot``), whose forward calls Lumen's custom ops.

    The engine (and each worker) runs the general plugins right after it picks the platform and before it builds
    the model, so every model built afterwards in the process gets the replacement. On another platform it does
    nothing: vllm-ascend likewise registers its replacements only where its NPU worker starts. Registering again
    is a no-op, so running it on every engine start is fine."""
    from mini_platform.platforms import current_platform

    if current_platform.device_name != "lumen":
        return
    from mini_platform.model.custom_op import CustomOp

    from .layers import LumenRMSNorm

    CustomOp.register_oot(LumenRMSNorm, name="RMSNorm")
