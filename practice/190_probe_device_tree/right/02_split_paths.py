# Correct: splits every path into components once and compares component tuples; a table of (kind, evidence, counter) tried in order with next() and a generator; precompiled patterns.
from __future__ import annotations

import re

PCI = "/sys/bus/pci/devices"
NVIDIA_NODE = re.compile(r"nvidia[0-9]+")
DAVINCI_NODE = re.compile(r"davinci[0-9]+")


def list_dir(tree, directory):
    want = tuple(p for p in directory.split("/") if p)
    children = []
    for path in tree:
        parts = tuple(p for p in path.split("/") if p)
        if len(parts) > len(want) and parts[:len(want)] == want and parts[len(want)] not in children:
            children.append(parts[len(want)])
    children.sort()
    return children


def _pci_count(tree, vendor, prefixes):
    total = 0
    for fn in list_dir(tree, PCI):
        files = {k: tree.get(f"{PCI}/{fn}/{k}") for k in ("vendor", "class")}
        if None in files.values():
            continue
        if files["vendor"].strip().lower() != vendor:
            continue
        if files["class"].strip().lower()[:len(prefixes[0])] in prefixes:
            total += 1
    return total


def probe(tree):
    table = [
        ("nvidia", [("/dev", lambda: sum(bool(NVIDIA_NODE.fullmatch(n)) for n in list_dir(tree, "/dev"))),
                    ("/proc/driver/nvidia/gpus", lambda: len(list_dir(tree, "/proc/driver/nvidia/gpus"))),
                    (PCI, lambda: _pci_count(tree, "0x10de", ("0x0300", "0x0302")))]),
        ("ascend", [("/dev", lambda: sum(bool(DAVINCI_NODE.fullmatch(n)) for n in list_dir(tree, "/dev"))),
                    (PCI, lambda: _pci_count(tree, "0x19e5", ("0x12",)))]),
    ]
    result = []
    for kind, sources in table:
        hit = next(((count, where) for where, count in ((w, c()) for w, c in sources) if count > 0), None)
        if hit is not None:
            result.append((kind, hit[0], hit[1]))
    return result
