"""Accelerator probing from the files the drivers publish, without starting any device runtime.

Creating a CUDA or CANN context in the parent process pins devices too early (and breaks fork),
so detection reads ``/dev``, ``/proc`` and ``/sys`` only. Every function takes ``root`` so tests and
notebooks can point it at a fake tree.

- NVIDIA: ``/dev/nvidia<N>`` device nodes, else ``/proc/driver/nvidia/gpus/<pci-id>/`` entries,
  else PCI functions with vendor ``0x10de`` and a display/3D class under ``/sys/bus/pci/devices``.
- Ascend: ``/dev/davinci<N>`` device nodes (``davinci_manager`` is the control node, not a device),
  else PCI functions with Huawei's vendor ``0x19e5`` and a processing-accelerator class (``0x12``).
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import MutableMapping

logger = logging.getLogger(__name__)

# Evidence from PCI config space only: the card is in the box, but no driver exposes it to this
# process (no driver loaded, or a container started without the device). Detectors ignore it.
PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA_PCI_VENDOR = "0x10de"
HUAWEI_PCI_VENDOR = "0x19e5"
_NVIDIA_NODE = re.compile(r"^nvidia(\d+)$")
_DAVINCI_NODE = re.compile(r"^davinci(\d+)$")

# Which variable selects visible devices for each accelerator kind.
VISIBLE_DEVICES_VARS = {
    "nvidia": "CUDA_VISIBLE_DEVICES",
    "ascend": "ASCEND_RT_VISIBLE_DEVICES",
}


@dataclass(frozen=True)
class Accelerator:
    """One kind of accelerator found on the host."""

    kind: str  # "nvidia" or "ascend"
    count: int
    evidence: str  # the path the count was read from

    @property
    def visible_devices_var(self) -> str:
        return VISIBLE_DEVICES_VARS[self.kind]


class VisibleDevicesMismatchError(RuntimeError):
    """CUDA_VISIBLE_DEVICES and ASCEND_RT_VISIBLE_DEVICES are both set and disagree."""


def _under(root: str | os.PathLike[str], path: str) -> Path:
    return Path(root) / path.lstrip("/")


def _count_nodes(directory: Path, pattern: re.Pattern[str]) -> int:
    try:
        return sum(1 for entry in directory.iterdir() if pattern.match(entry.name))
    except OSError:
        return 0


def _pci_functions(root: str | os.PathLike[str], vendor: str, class_prefixes: tuple[str, ...]) -> int:
    devices = _under(root, PCI_DEVICES)
    found = 0
    try:
        entries = list(devices.iterdir())
    except OSError:
        return 0
    for entry in entries:
        try:
            if (entry / "vendor").read_text().strip().lower() != vendor:
                continue
            pci_class = (entry / "class").read_text().strip().lower()
        except OSError:
            continue
        if pci_class.startswith(class_prefixes):
            found += 1
    return found


def nvidia_device_count(root: str | os.PathLike[str] = "/") -> tuple[int, str]:
    """Number of NVIDIA GPUs and the path it was read from ("" when none was found)."""
    for path, counter in (
        ("/dev", lambda p: _count_nodes(p, _NVIDIA_NODE)),
        ("/proc/driver/nvidia/gpus", lambda p: _count_nodes(p, re.compile(r".+"))),
    ):
        count = counter(_under(root, path))
        if count:
            return count, path
    # 0x0300 VGA controller, 0x0302 3D controller.
    count = _pci_functions(root, NVIDIA_PCI_VENDOR, ("0x0300", "0x0302"))
    return count, (PCI_DEVICES if count else "")


def ascend_device_count(root: str | os.PathLike[str] = "/") -> tuple[int, str]:
    """Number of Ascend NPUs and the path it was read from ("" when none was found)."""
    count = _count_nodes(_under(root, "/dev"), _DAVINCI_NODE)
    if count:
        return count, "/dev"
    # 0x12 is the PCI base class "processing accelerators".
    count = _pci_functions(root, HUAWEI_PCI_VENDOR, ("0x12",))
    return count, (PCI_DEVICES if count else "")


def probe(root: str | os.PathLike[str] = "/") -> list[Accelerator]:
    """Every accelerator kind present under ``root``, NVIDIA first. Empty on a CPU-only host."""
    found = []
    for kind, counter in (("nvidia", nvidia_device_count), ("ascend", ascend_device_count)):
        count, evidence = counter(root)
        if count:
            found.append(Accelerator(kind, count, evidence))
    return found


def reconcile_visible_devices(env: MutableMapping[str, str] | None = None) -> None:
    """Make CUDA_VISIBLE_DEVICES and ASCEND_RT_VISIBLE_DEVICES agree on an Ascend host.

    Libraries written for CUDA read the first, CANN reads the second. When only one is set it is
    copied to the other (with a warning); when both are set and differ, starting would put work on
    devices nobody asked for, so this refuses with :class:`VisibleDevicesMismatchError`.
    Call it before the device runtime starts.
    """
    env = os.environ if env is None else env
    cuda_var, ascend_var = VISIBLE_DEVICES_VARS["nvidia"], VISIBLE_DEVICES_VARS["ascend"]
    cuda, ascend = env.get(cuda_var), env.get(ascend_var)
    if cuda is not None and ascend is not None:
        if cuda.replace(" ", "") != ascend.replace(" ", ""):
            raise VisibleDevicesMismatchError(
                f"{cuda_var}={cuda!r} and {ascend_var}={ascend!r} select different devices; "
                f"unset one of them or make them equal"
            )
        return
    if cuda is not None:
        logger.warning("%s is unset; copying %s=%r to it", ascend_var, cuda_var, cuda)
        env[ascend_var] = cuda
    elif ascend is not None:
        logger.warning("%s is unset; copying %s=%r to it", cuda_var, ascend_var, ascend)
        env[cuda_var] = ascend
