"""Tests of exercise 190: listing a fake directory tree and probing accelerators from it."""
import random

import pytest

from submission import list_dir, probe

PCI = "/sys/bus/pci/devices"


def pci(address, vendor, pci_class):
    return {f"{PCI}/{address}/vendor": vendor, f"{PCI}/{address}/class": pci_class}


def test_example():
    tree = {
        "/dev/nvidia0": None, "/dev/nvidia1": None, "/dev/nvidiactl": None,
        "/dev/davinci_manager": None,
        f"{PCI}/0000:81:00.0/vendor": "0x19e5\n",
        f"{PCI}/0000:81:00.0/class": "0x120000\n",
    }
    assert list_dir(tree, "/dev") == ["davinci_manager", "nvidia0", "nvidia1", "nvidiactl"]
    assert probe(tree) == [("nvidia", 2, "/dev"), ("ascend", 1, PCI)]
    assert probe({}) == []


def test_list_dir_gives_direct_children_only_once():
    tree = {"/proc/driver/nvidia/gpus/0000:01:00.0/information": "x", "/proc/driver/nvidia/gpus/0000:02:00.0/information": "y",
            "/proc/driver/nvidia/gpus/0000:02:00.0/registry": "z", "/proc/driver/nvidia/version": "550",
            "/proc/driver/nvidia-uvm": None}
    assert list_dir(tree, "/proc/driver/nvidia/gpus") == ["0000:01:00.0", "0000:02:00.0"]
    assert list_dir(tree, "/proc/driver/nvidia") == ["gpus", "version"]  # the sibling "nvidia-uvm" is no child
    assert list_dir(tree, "/proc/driver") == ["nvidia", "nvidia-uvm"]
    assert list_dir(tree, "/sys") == []


def test_control_nodes_are_not_devices():
    tree = {"/dev/nvidiactl": None, "/dev/nvidia-uvm": None, "/dev/nvidia-modeset": None, "/dev/nvidia0x": None,
            "/dev/davinci_manager": None, "/dev/davinci": None, "/dev/hisi_hdc": None}
    assert probe(tree) == []


def test_nvidia_falls_back_to_proc_then_pci():
    proc = {"/proc/driver/nvidia/gpus/0000:3b:00.0/information": "Model: H100",
            "/proc/driver/nvidia/gpus/0000:3b:00.0/registry": "x"}  # one GPU, two files: count children
    assert probe(proc) == [("nvidia", 1, "/proc/driver/nvidia/gpus")]
    sys_only = {**pci("0000:3b:00.0", "0x10DE", "0x030200"), **pci("0000:5e:00.0", "0x10de", "0x030000"),
                **pci("0000:00:1f.3", "0x10de", "0x040300"),   # an NVIDIA audio function is not a GPU
                **pci("0000:00:1f.4", "0x10de", "0x038000")}   # nor "other display controller" (0x0380)
    assert probe(sys_only) == [("nvidia", 2, PCI)]
    both = {**proc, **sys_only, "/dev/nvidia0": None, "/dev/nvidia7": None, "/dev/nvidia3": None}
    assert probe(both) == [("nvidia", 3, "/dev")]  # the first source with a count wins


def test_ascend_pci_rules():
    tree = {**pci("0000:c1:00.0", " 0x19e5 ", "0x120000"), **pci("0000:c2:00.0", "0x19e5", "0x060400"),
            **pci("0000:c3:00.0", "0x19e5", "0x1200ff"), f"{PCI}/0000:c4:00.0/vendor": "0x19e5",  # no class file
            **pci("0000:c5:00.0", "0x19e5", "0x120100")}  # any class starting with 0x12 counts
    assert probe(tree) == [("ascend", 3, PCI)]
    tree["/dev/davinci0"] = None
    assert probe(tree) == [("ascend", 1, "/dev")]


def _random_tree(rng):
    tree, expect = {}, {}
    n_dev = rng.choice([0, 0, 1, 3, 8])
    for i in rng.sample(range(16), n_dev):
        tree[f"/dev/nvidia{i}"] = None
    n_proc = rng.choice([0, 2])
    for i in range(n_proc):
        tree[f"/proc/driver/nvidia/gpus/0000:{i:02x}:00.0/information"] = "Model: X"
    n_pci_gpu = rng.choice([0, 1, 4])
    for i in range(n_pci_gpu):
        tree.update(pci(f"0000:{0x40 + i:02x}:00.0", rng.choice(["0x10de", "0x10DE\n"]), rng.choice(["0x030000", "0x030200"])))
    n_davinci = rng.choice([0, 0, 2, 8])
    for i in range(n_davinci):
        tree[f"/dev/davinci{i}"] = None
    n_pci_npu = rng.choice([0, 1, 8])
    for i in range(n_pci_npu):
        tree.update(pci(f"0000:{0x80 + i:02x}:00.0", "0x19e5", "0x120000\n"))
    for name in rng.sample(["nvidiactl", "nvidia-uvm", "davinci_manager", "null", "hisi_hdc"], 3):
        tree[f"/dev/{name}"] = None
    tree.update(pci("0000:00:02.0", "0x8086", "0x030000"))  # an Intel GPU counts for nobody
    nvidia = next(((n, e) for n, e in ((n_dev, "/dev"), (n_proc, "/proc/driver/nvidia/gpus"), (n_pci_gpu, PCI)) if n), None)
    ascend = next(((n, e) for n, e in ((n_davinci, "/dev"), (n_pci_npu, PCI)) if n), None)
    for kind, found in (("nvidia", nvidia), ("ascend", ascend)):
        if found:
            expect[kind] = found
    return tree, [(kind, n, e) for kind, (n, e) in expect.items()]


@pytest.mark.parametrize("seed", range(30))
def test_random_trees(seed):
    tree, expected = _random_tree(random.Random(seed))
    repro = {"tree": tree}  # noqa: F841 - shown by the judge when this case fails: probe(tree)
    assert probe(tree) == expected
