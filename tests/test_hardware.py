"""Accelerator probing against fake /dev, /proc and /sys trees, and the visible-devices rule."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mini_platform import hardware
from mini_platform.hardware import Accelerator, VisibleDevicesMismatchError, reconcile_visible_devices


def touch(root: Path, path: str, text: str = "") -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def pci_function(root: Path, address: str, vendor: str, pci_class: str) -> None:
    touch(root, f"/sys/bus/pci/devices/{address}/vendor", vendor + "\n")
    touch(root, f"/sys/bus/pci/devices/{address}/class", pci_class + "\n")


def test_empty_root_has_no_accelerator(tmp_path):
    assert hardware.nvidia_device_count(tmp_path) == (0, "")
    assert hardware.ascend_device_count(tmp_path) == (0, "")
    assert hardware.probe(tmp_path) == []
    (tmp_path / "dev").mkdir()
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    assert hardware.probe(str(tmp_path)) == []


def test_nvidia_device_nodes_are_counted_and_control_nodes_ignored(tmp_path):
    for name in ("nvidia0", "nvidia1", "nvidia7", "nvidiactl", "nvidia-uvm", "nvidia-modeset", "nvidia-caps"):
        touch(tmp_path, f"/dev/{name}")
    assert hardware.nvidia_device_count(tmp_path) == (3, "/dev")
    assert hardware.probe(tmp_path) == [Accelerator("nvidia", 3, "/dev")]


def test_nvidia_falls_back_to_proc_driver_entries(tmp_path):
    touch(tmp_path, "/dev/nvidiactl")  # the driver is loaded but device nodes are not created yet
    for bus in ("0000:17:00.0", "0000:65:00.0"):
        touch(tmp_path, f"/proc/driver/nvidia/gpus/{bus}/information", "Model: fake\n")
    assert hardware.nvidia_device_count(tmp_path) == (2, "/proc/driver/nvidia/gpus")


def test_nvidia_falls_back_to_pci_vendor_and_display_class(tmp_path):
    pci_function(tmp_path, "0000:01:00.0", "0x10de", "0x030000")  # VGA controller
    pci_function(tmp_path, "0000:02:00.0", "0x10DE", "0x030200")  # 3D controller, upper-case hex
    pci_function(tmp_path, "0000:01:00.1", "0x10de", "0x040300")  # the GPU's audio function
    pci_function(tmp_path, "0000:03:00.0", "0x8086", "0x030000")  # someone else's VGA
    touch(tmp_path, "/sys/bus/pci/devices/0000:04:00.0/vendor", "0x10de\n")  # no class file: skipped
    assert hardware.nvidia_device_count(tmp_path) == (2, "/sys/bus/pci/devices")
    assert hardware.ascend_device_count(tmp_path) == (0, "")


def test_davinci_nodes_count_and_davinci_manager_is_ignored(tmp_path):
    for name in ("davinci0", "davinci1", "davinci2", "davinci3", "davinci_manager", "devmm_svm", "hisi_hdc"):
        touch(tmp_path, f"/dev/{name}")
    assert hardware.ascend_device_count(tmp_path) == (4, "/dev")
    (accelerator,) = hardware.probe(tmp_path)
    assert accelerator == Accelerator("ascend", 4, "/dev")
    assert accelerator.visible_devices_var == "ASCEND_RT_VISIBLE_DEVICES"


def test_only_davinci_manager_is_no_npu(tmp_path):
    touch(tmp_path, "/dev/davinci_manager")
    assert hardware.ascend_device_count(tmp_path) == (0, "")


def test_ascend_falls_back_to_pci_processing_accelerator_class(tmp_path):
    pci_function(tmp_path, "0000:c1:00.0", "0x19e5", "0x120000")  # processing accelerator
    pci_function(tmp_path, "0000:81:00.0", "0x19e5", "0x120000")
    pci_function(tmp_path, "0000:3d:00.0", "0x19e5", "0x020000")  # a Huawei network card
    assert hardware.ascend_device_count(tmp_path) == (2, "/sys/bus/pci/devices")


def test_probe_lists_nvidia_first_then_ascend(tmp_path):
    touch(tmp_path, "/dev/davinci0")
    touch(tmp_path, "/dev/nvidia0")
    assert [(a.kind, a.count, a.visible_devices_var) for a in hardware.probe(tmp_path)] == [
        ("nvidia", 1, "CUDA_VISIBLE_DEVICES"), ("ascend", 1, "ASCEND_RT_VISIBLE_DEVICES")]


@pytest.mark.parametrize("present, missing", [
    ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"),
    ("ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"),
])
def test_reconcile_copies_the_one_that_is_set_with_a_warning(present, missing, caplog):
    env = {present: "2,3", "OTHER": "x"}
    with caplog.at_level(logging.WARNING, logger="mini_platform.hardware"):
        reconcile_visible_devices(env)
    assert env == {present: "2,3", missing: "2,3", "OTHER": "x"}
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and missing in record.getMessage()


@pytest.mark.parametrize("cuda, ascend", [("0,1", "0,1"), ("0, 1", "0,1"), ("", "")])
def test_reconcile_accepts_equal_values_silently(cuda, ascend, caplog):
    env = {"CUDA_VISIBLE_DEVICES": cuda, "ASCEND_RT_VISIBLE_DEVICES": ascend}
    with caplog.at_level(logging.DEBUG, logger="mini_platform.hardware"):
        reconcile_visible_devices(env)
    assert env == {"CUDA_VISIBLE_DEVICES": cuda, "ASCEND_RT_VISIBLE_DEVICES": ascend}
    assert caplog.records == []


def test_reconcile_refuses_different_values_and_names_both():
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "ASCEND_RT_VISIBLE_DEVICES": "2,3"}
    with pytest.raises(VisibleDevicesMismatchError) as info:
        reconcile_visible_devices(env)
    message = str(info.value)
    assert "CUDA_VISIBLE_DEVICES='0,1'" in message and "ASCEND_RT_VISIBLE_DEVICES='2,3'" in message
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1", "ASCEND_RT_VISIBLE_DEVICES": "2,3"}  # untouched


def test_reconcile_leaves_an_env_without_either_alone():
    env = {"PATH": "/bin"}
    reconcile_visible_devices(env)
    assert env == {"PATH": "/bin"}


def test_reconcile_defaults_to_os_environ(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "5")
    reconcile_visible_devices()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "5"
