"""Stage 260: the project installs, declares its detector, and the detector finds a device without a runtime."""
import json
import os
import re
import stat
import subprocess
import sys
from importlib.metadata import distributions

import pytest

import submission
from capstone import harness

PLATFORM = "lumen_npu.platform.LumenPlatform"
# Runs in a fresh interpreter: what the detector returns for each root in turn (None: the variable unset),
# and what importing and running it loaded.
PROBE = """
import json, os, sys
spec = json.loads(sys.argv[1])
os.environ.update(spec["env"])
if spec["late"]:
    import lumen_npu  # imported before the root is set: the detector must read it when called
results = []
for root in spec["roots"]:
    if root is None:
        os.environ.pop("LUMEN_DEVICE_ROOT", None)
    else:
        os.environ["LUMEN_DEVICE_ROOT"] = root
    import lumen_npu
    results.append(lumen_npu.register())
print(json.dumps({"results": results, "torch": "torch" in sys.modules, "runtime": "lumen_npu.device" in sys.modules}))
"""


@pytest.fixture(scope="module")
def site():
    return harness.install(submission.PROJECT)


def probe(site, roots, *, when="early", env=None, cwd=None):
    """Run the detector once per root of ``roots``, in that order, in one fresh interpreter."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LUMEN_", "MINI_PLATFORM"))}
    clean["PYTHONPATH"] = os.pathsep.join([str(site), *(os.path.abspath(p) for p in sys.path if p)])
    spec = {"roots": [None if r is None else str(r) for r in roots], "late": when == "late", "env": env or {}}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(spec)], env=clean, cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"the detector raised:\n{harness.source_paths(done.stderr[-1500:])}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def detect(site, *nodes, when="early", root=None, env=None):
    result = probe(site, [root or harness.fake_device_root(*nodes)], when=when, env=env)
    return {**result, "result": result["results"][0]}


def device_node_root(*nodes):
    """A fake root whose ``dev/<node>`` entries are character devices, as a driver creates them: real nodes
    (mknod) where this process may make them, else symbolic links to /dev/null (a character device too)."""
    root = harness.fake_device_root()
    for node in nodes:
        path = root / "dev" / node
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except (OSError, AttributeError):
            os.symlink(os.devnull, path)
    return root


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


@pytest.mark.parametrize("nodes", [("lumen",), ("lumenx", "lumen0.lock"), ("lumen_ctl", "davinci0", "nvidia0"),
                                   ("xlumen0", "my_lumen12")])
def test_only_lumen_followed_by_digits_counts(site, nodes):
    assert detect(site, *nodes)["result"] is None


@pytest.mark.parametrize("node", ["lumen0", "lumen7", "lumen12"])
def test_any_device_number_counts(site, node):
    assert detect(site, node)["result"] == PLATFORM


def test_a_root_without_dev_means_none_not_an_exception(site):
    missing = harness.fake_device_root() / "no-such-folder"
    assert detect(site, root=missing)["result"] is None


def test_device_nodes_are_character_devices(site):
    root = device_node_root("lumen0", "lumen_ctl")
    kinds = {entry.name: stat.filemode(entry.stat().st_mode) for entry in (root / "dev").iterdir()}
    assert detect(site, root=root)["result"] == PLATFORM, \
        f"<root>/dev holds character devices, as a driver makes them: {kinds}; lumen0 is a device"


def test_a_root_whose_dev_is_a_file_means_none(site):
    root = harness.fake_device_root()
    (root / "dev").rmdir()
    (root / "dev").write_text("not a folder")
    assert detect(site, root=root)["result"] is None


def test_without_the_variable_the_root_is_slash(site):
    here = harness.fake_device_root("lumen0")  # the current directory: "." is not the default root
    real = PLATFORM if any(re.fullmatch(r"lumen\d+", name) for name in os.listdir("/dev")) else None
    assert probe(site, [None], cwd=here)["results"] == [real], \
        f"LUMEN_DEVICE_ROOT unset; the current directory has dev/lumen0, /dev has {'a' if real else 'no'} lumen node"


def test_every_call_reads_the_root_and_the_folder_again(site):
    one, none = harness.fake_device_root("lumen0"), harness.fake_device_root("lumen_ctl")
    got = probe(site, [one, none, one, one / "missing"])["results"]
    assert got == [PLATFORM, None, PLATFORM, None], \
        ("register() called four times in one process, LUMEN_DEVICE_ROOT set before each call to a root with "
         "dev/lumen0, one with only dev/lumen_ctl, the first again, and a missing folder")


def test_mini_platform_lumen_is_no_device(site):
    got = detect(site, "lumen_ctl", env={"MINI_PLATFORM": "lumen"})["result"]
    assert got is None, "MINI_PLATFORM=lumen selects the plugin; it does not make a device node appear"


def test_the_root_is_read_when_the_detector_runs(site):
    assert detect(site, "lumen0", when="late")["result"] == PLATFORM


def test_detection_starts_no_runtime(site):
    probe = detect(site, "lumen0")
    assert not probe["runtime"], "detecting imported lumen_npu.device (the Lumen runtime)"
    assert not probe["torch"], "detecting imported torch"
