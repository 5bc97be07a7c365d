# Mistake: Takes every NVIDIA PCI function whose class starts with 0x03 (any display controller), not only 0x0300 and 0x0302.
from __future__ import annotations

import re

PCI_DEVICES = "/sys/bus/pci/devices"


def list_dir(tree: dict[str, str | None], directory: str) -> list[str]:
    """Sorted names of the direct children of `directory` (keys starting with directory + "/")."""
    prefix = directory.rstrip("/") + "/"
    return sorted({path[len(prefix):].split("/", 1)[0] for path in tree
                   if path.startswith(prefix) and len(path) > len(prefix)})


def _count_nodes(tree, directory: str, pattern: str) -> int:
    return sum(1 for name in list_dir(tree, directory) if re.fullmatch(pattern, name))


def _count_pci(tree, vendor: str, class_prefixes: tuple[str, ...]) -> int:
    found = 0
    for function in list_dir(tree, PCI_DEVICES):
        vendor_text = tree.get(f"{PCI_DEVICES}/{function}/vendor")
        class_text = tree.get(f"{PCI_DEVICES}/{function}/class")
        if vendor_text is None or class_text is None:
            continue
        if vendor_text.strip().lower() == vendor and class_text.strip().lower().startswith(class_prefixes):
            found += 1
    return found


def probe(tree: dict[str, str | None]) -> list[tuple[str, int, str]]:
    """[(kind, count, evidence)] for "nvidia" then "ascend", only the kinds found."""
    sources = {
        "nvidia": [("/dev", lambda: _count_nodes(tree, "/dev", r"nvidia\d+")),
                   ("/proc/driver/nvidia/gpus", lambda: len(list_dir(tree, "/proc/driver/nvidia/gpus"))),
                   (PCI_DEVICES, lambda: _count_pci(tree, "0x10de", ("0x03",)))],
        "ascend": [("/dev", lambda: _count_nodes(tree, "/dev", r"davinci\d+")),
                   (PCI_DEVICES, lambda: _count_pci(tree, "0x19e5", ("0x12",)))],
    }
    found = []
    for kind, candidates in sources.items():
        for evidence, count in candidates:
            n = count()
            if n:
                found.append((kind, n, evidence))
                break
    return found
