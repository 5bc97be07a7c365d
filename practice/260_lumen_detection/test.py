"""Stage 260: the project installs, declares its detector, and the detector finds a device without a runtime."""
import json
import os
import subprocess
import sys
from importlib.metadata import distributions

import pytest

import submission
from capstone import harness

PLATFORM = "lumen_npu.platform.LumenPlatform"
# Runs in a fresh interpreter: what the detector returns, and what importing and running it loaded.
PROBE = """
import json, os, sys
root = sys.argv[1]
if sys.argv[2] == "late":
    import lumen_npu  # imported before the root is set: the detector must read it when called
os.environ["LUMEN_DEVICE_ROOT"] = root
import lumen_npu
result = lumen_npu.register()
print(json.dumps({"result": result, "torch": "torch" in sys.modules, "runtime": "lumen_npu.device" in sys.modules}))
"""


@pytest.fixture(scope="module")
def site():
    return harness.install(submission.PROJECT)


def detect(site, *nodes, when="early", root=None):
    root = root or harness.fake_device_root(*nodes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LUMEN_", "MINI_PLATFORM"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    done = subprocess.run([sys.executable, "-c", PROBE, str(root), when], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"the detector raised:\n{harness.source_paths(done.stderr[-1500:])}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def entry_points(site, group):
    found = {}
    for dist in distributions(path=[str(site)]):
        found.update({ep.name: ep.value for ep in dist.entry_points if ep.group == group})
    return found


def test_example_detects_a_device_node(site):
    probe = detect(site, "lumen0", "lumen1", "lumen_ctl")
    assert probe["result"] == PLATFORM


def test_entry_point_in_the_platform_plugins_group(site):
    found = entry_points(site, "mini_platform.platform_plugins")
    assert found.get("lumen") == "lumen_npu:register", \
        f"entry points of group mini_platform.platform_plugins in your pyproject.toml: {found}"


def test_no_device_node_means_none(site):
    assert detect(site)["result"] is None


def test_the_control_node_is_not_a_device(site):
    assert detect(site, "lumen_ctl")["result"] is None


@pytest.mark.parametrize("nodes", [("lumen",), ("lumenx", "lumen0.lock"), ("lumen_ctl", "davinci0", "nvidia0")])
def test_only_lumen_followed_by_digits_counts(site, nodes):
    assert detect(site, *nodes)["result"] is None


@pytest.mark.parametrize("node", ["lumen0", "lumen7", "lumen12"])
def test_any_device_number_counts(site, node):
    assert detect(site, node)["result"] == PLATFORM


def test_a_root_without_dev_means_none_not_an_exception(site):
    missing = harness.fake_device_root() / "no-such-folder"
    assert detect(site, root=missing)["result"] is None


def test_the_root_is_read_when_the_detector_runs(site):
    assert detect(site, "lumen0", when="late")["result"] == PLATFORM


def test_detection_starts_no_runtime(site):
    probe = detect(site, "lumen0")
    assert not probe["runtime"], "detecting imported lumen_npu.device (the Lumen runtime)"
    assert not probe["torch"], "detecting imported torch"
