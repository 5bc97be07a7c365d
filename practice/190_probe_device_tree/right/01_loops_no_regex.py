# Correct: no regular expressions (name[len(prefix):].isdigit()), list_dir with an explicit loop and a set, PCI functions found from the keys ending in /vendor, sources tried with plain if/elif chains.
from __future__ import annotations

PCI = "/sys/bus/pci/devices"


def list_dir(tree, directory):
    prefix = directory + "/"
    names = set()
    for path in tree:
        if path.startswith(prefix):
            rest = path[len(prefix):]
            first = rest.split("/")[0]
            if first:
                names.add(first)
    return sorted(names)


def _nodes(tree, stem):
    n = 0
    for name in list_dir(tree, "/dev"):
        tail = name[len(stem):]
        if name.startswith(stem) and tail.isdigit() and tail.isascii():
            n += 1
    return n


def _pci(tree, vendor, classes):
    n = 0
    for fn in list_dir(tree, PCI):
        v = tree.get(PCI + "/" + fn + "/vendor")
        c = tree.get(PCI + "/" + fn + "/class")
        if v is None or c is None:
            continue
        v, c = v.strip().lower(), c.strip().lower()
        if v == vendor and any(c.startswith(p) for p in classes):
            n += 1
    return n


def probe(tree):
    out = []
    n = _nodes(tree, "nvidia")
    if n:
        out.append(("nvidia", n, "/dev"))
    else:
        n = len(list_dir(tree, "/proc/driver/nvidia/gpus"))
        if n:
            out.append(("nvidia", n, "/proc/driver/nvidia/gpus"))
        else:
            n = _pci(tree, "0x10de", ["0x0300", "0x0302"])
            if n:
                out.append(("nvidia", n, PCI))
    n = _nodes(tree, "davinci")
    if n:
        out.append(("ascend", n, "/dev"))
    else:
        n = _pci(tree, "0x19e5", ["0x12"])
        if n:
            out.append(("ascend", n, PCI))
    return out
