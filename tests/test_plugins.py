"""Real plugin distributions, installed into temporary directories and found by importlib.metadata.

Each check runs in a fresh interpreter (PYTHONPATH = the plugin directories), because what is
imported, and what is resolved once per process, is the point. The child's environment is built
explicitly: no MINI_PLATFORM_* variable leaks in from the test process (tests/conftest.py sets
MINI_PLATFORM_TARGET_DEVICE=cpu there).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mini_platform.platforms import _usable_nvidia_gpus

ROOT = Path(__file__).resolve().parent.parent
PLATFORM_GROUP = "mini_platform.platform_plugins"
GENERAL_GROUP = "mini_platform.general_plugins"
# The built-in platform this machine resolves to when no plugin is active.
BUILTIN = ("mini_platform.platforms.cuda.CudaPlatform" if _usable_nvidia_gpus()
           else "mini_platform.platforms.cpu.CpuPlatform")


def install_distribution(site: Path, dist: str, entry_points: dict[str, dict[str, str]],
                         modules: dict[str, str]) -> None:
    """Write what `pip install` would leave in site-packages: NAME-VERSION.dist-info plus the modules."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = []
    for group, entries in entry_points.items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in entries.items()), ""]
    (info / "entry_points.txt").write_text("\n".join(lines))
    (info / "RECORD").write_text("")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source))


def platform_module(cls: str, device_name: str) -> str:
    return f"""
    from mini_platform.platforms import Platform, PlatformEnum

    class {cls}(Platform):
        _enum = PlatformEnum.OOT
        device_name = {device_name!r}
        device_type = "cpu"  # forwards to torch.cpu, so this runs anywhere
        dispatch_key = "PrivateUse1"
        dist_backend = "gloo"

    def register():
        return __name__ + ".{cls}"
    """


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    """One directory per plugin distribution, so each test puts exactly the ones it wants on the path."""
    base = tmp_path_factory.mktemp("plugins")
    specs = {
        "demo": ({PLATFORM_GROUP: {"demo": "demo_plugin:register"}},
                 {"demo_plugin": platform_module("DemoPlatform", "demo")}),
        "second": ({PLATFORM_GROUP: {"second": "second_plugin:register"}},
                   {"second_plugin": platform_module("SecondPlatform", "second")}),
        "off": ({PLATFORM_GROUP: {"off": "off_plugin:register"}},
                {"off_plugin": "def register():\n    return None\n"}),
        "broken": ({PLATFORM_GROUP: {"broken": "broken_plugin:register"}},
                   {"broken_plugin": "raise ImportError('needs the vendor SDK libfoo.so')\n"}),
        "raiser": ({PLATFORM_GROUP: {"raiser": "raiser_plugin:register"}},
                   {"raiser_plugin": "def register():\n    raise RuntimeError('driver version mismatch')\n"}),
        "general": ({GENERAL_GROUP: {"bump": "general_plugin:bump", "explode": "general_plugin:explode",
                                     "gone": "missing_general_plugin:setup"}},
                    {"general_plugin": """
                        CALLS = []

                        def bump():
                            CALLS.append("bump")

                        def explode():
                            CALLS.append("explode")
                            raise ValueError("bad registry")
                        """}),
    }
    sites = {}
    for name, (entry_points, modules) in specs.items():
        sites[name] = base / name
        install_distribution(sites[name], f"{name}_plugin", entry_points, modules)
    return sites


# Start of every child script: collect all log records in `records` (printed back as JSON).
COLLECT_LOGS = """
import json, logging, sys

records = []

class Collect(logging.Handler):
    def emit(self, record):
        records.append([record.levelname, record.getMessage()])

logging.getLogger().addHandler(Collect())
logging.getLogger().setLevel(logging.DEBUG)
"""

PROBE = COLLECT_LOGS + """
def plugin_modules():
    return sorted(m for m in sys.modules if m.endswith("_plugin") or m == "mini_platform.ascend")

import mini_platform
from mini_platform import plugins

out = {"torch_after_import": "torch" in sys.modules}
out["discovered"] = sorted(plugins.discover(plugins.PLATFORM_PLUGINS_GROUP))
out["modules_after_discovery"] = plugin_modules()
try:
    platform = mini_platform.current_platform
    out["platform"] = type(platform).__module__ + "." + type(platform).__qualname__
    out["cached"] = mini_platform.current_platform is platform
    out["torch_after_resolution"] = "torch" in sys.modules
    out["modules"] = plugin_modules()
    if "--forward" in sys.argv:  # imports torch, which costs a second: only where it is checked
        out["forwarded_device_count"] = platform.device_count()
except Exception as exc:
    out["error"] = type(exc).__name__ + ": " + str(exc)
    out["modules"] = plugin_modules()
out["logs"] = records
print(json.dumps(out))
"""


def run_child(code: str, sites: dict[str, Path], use: list[str], *args: str, **env_vars: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINI_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([*(str(sites[name]) for name in use), str(ROOT)])
    env.update(env_vars)
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=sites[use[0]] if use else ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def probe(sites, use, *args, **env_vars) -> dict:
    return run_child(PROBE, sites, use, *args, **env_vars)


def warnings_about(result: dict, name: str) -> list[str]:
    return [msg for level, msg in result["logs"] if level == "WARNING" and name in msg]


def test_installed_plugin_is_discovered_selected_instantiated_and_forwards(sites):
    result = probe(sites, ["demo", "off", "broken", "raiser"], "--forward")
    # Discovery reads metadata only: every entry point is listed, no plugin module is imported yet.
    assert {"demo", "off", "broken", "raiser", "ascend"} <= set(result["discovered"])
    assert result["modules_after_discovery"] == []
    assert result["platform"] == "demo_plugin.DemoPlatform" and result["cached"]
    assert result["modules"] == ["demo_plugin", "mini_platform.ascend", "off_plugin", "raiser_plugin"]
    # Neither importing nor resolving touched torch; forwarding to torch.cpu did.
    assert result["torch_after_import"] is False and result["torch_after_resolution"] is False
    assert result["forwarded_device_count"] == 1
    # A detector that raises and a module that fails to import: inactive, each warned about once, with the reason.
    (raised,) = warnings_about(result, "raiser")
    assert "RuntimeError" in raised and "driver version mismatch" in raised
    (broken,) = warnings_about(result, "broken")
    assert "ImportError" in broken and "needs the vendor SDK libfoo.so" in broken
    messages = [msg for _, msg in result["logs"]]
    assert "Platform plugin demo is activated" in messages
    assert any("Loaded platform plugin demo (demo_plugin:register)" in msg for msg in messages)


def test_two_active_plugins_are_an_error_naming_both(sites):
    result = probe(sites, ["demo", "second", "off"])
    assert result["error"].startswith("PlatformResolutionError")
    assert "demo" in result["error"] and "second" in result["error"] and "off" not in result["error"]


def test_selection_imports_only_the_selected_plugin(sites):
    result = probe(sites, ["demo", "second", "off", "broken", "raiser"], MINI_PLATFORM="second")
    assert result["platform"] == "second_plugin.SecondPlatform"
    assert result["modules"] == ["second_plugin"]  # not even mini_platform.ascend
    assert warnings_about(result, "") == []


def test_selection_ignores_the_allow_list(sites):
    result = probe(sites, ["demo", "second"], MINI_PLATFORM="demo", MINI_PLATFORM_PLUGINS="second")
    assert result["platform"] == "demo_plugin.DemoPlatform" and result["modules"] == ["demo_plugin"]


def test_selecting_the_builtin_cpu_platform_by_name(sites):
    result = probe(sites, ["demo"], MINI_PLATFORM="cpu")
    assert result["platform"] == "mini_platform.platforms.cpu.CpuPlatform" and result["modules"] == []


@pytest.mark.parametrize("name, expected", [
    ("nope", "MINI_PLATFORM='nope' names no platform plugin; installed: "),
    ("off", "'off' selected by MINI_PLATFORM is not available"),
    ("broken", "needs the vendor SDK libfoo.so"),
], ids=["unknown", "unavailable", "import-fails"])
def test_selection_errors_name_the_plugin_and_the_reason(sites, name, expected):
    result = probe(sites, ["demo", "off", "broken"], MINI_PLATFORM=name)
    assert result["error"].startswith("PlatformResolutionError") and expected in result["error"]
    assert "demo_plugin" not in result["modules"]


def test_allow_list_limits_which_plugins_are_loaded(sites):
    result = probe(sites, ["demo", "second", "raiser"], MINI_PLATFORM_PLUGINS="second, raiser")
    assert result["platform"] == "second_plugin.SecondPlatform"
    assert result["discovered"] == ["raiser", "second"]
    assert result["modules"] == ["raiser_plugin", "second_plugin"]
    assert any("not listed in MINI_PLATFORM_PLUGINS" in msg and "demo" in msg for _, msg in result["logs"])


def test_empty_allow_list_falls_back_to_the_builtin_platform(sites):
    result = probe(sites, ["demo", "second"], MINI_PLATFORM_PLUGINS="")
    assert result["platform"] == BUILTIN and result["modules"] == []


def test_cpu_target_loads_no_plugin(sites):
    result = probe(sites, ["demo", "second", "raiser"], MINI_PLATFORM_TARGET_DEVICE="cpu")
    assert result["platform"] == "mini_platform.platforms.cpu.CpuPlatform"
    assert result["modules"] == [] and result["torch_after_resolution"] is False


def test_without_plugins_the_builtin_cpu_platform_is_detected(sites):
    result = probe(sites, ["off"])
    assert result["platform"] == BUILTIN
    assert f"Automatically detected platform {BUILTIN.split('.')[-2]}." in [msg for _, msg in result["logs"]]


GENERAL = COLLECT_LOGS + """
from mini_platform import plugins
plugins.load_general_plugins()
plugins.load_general_plugins()
import general_plugin
calls_after_two_loads = list(general_plugin.CALLS)
only_bump = sorted(plugins.load_plugins_by_group(plugins.GENERAL_PLUGINS_GROUP, {"MINI_PLATFORM_PLUGINS": "bump"}))
print(json.dumps({"calls": calls_after_two_loads, "only_bump": only_bump, "logs": records,
                  "torch": "torch" in sys.modules}))
"""


def test_general_plugins_run_once_per_process_and_failures_are_contained(sites):
    result = run_child(GENERAL, sites, ["general"])
    assert sorted(result["calls"]) == ["bump", "explode"]  # each once, despite two calls
    assert result["only_bump"] == ["bump"]
    (exploded,) = warnings_about(result, "explode")
    assert "ValueError" in exploded and "bad registry" in exploded
    (gone,) = warnings_about(result, "gone")
    assert "missing_general_plugin" in gone
    assert result["torch"] is False


def test_general_plugins_honour_the_allow_list(sites):
    result = run_child(GENERAL, sites, ["general"], MINI_PLATFORM_PLUGINS="explode")
    assert result["calls"] == ["explode"]


NO_TORCH = """
import sys
import mini_platform
import mini_platform.platforms, mini_platform.platforms.cpu, mini_platform.platforms.cuda
import mini_platform.plugins, mini_platform.hardware, mini_platform.envs, mini_platform.utils
import mini_platform.ascend, mini_platform.ascend.platform
from mini_platform.platforms import resolve_current_platform_cls_qualname
qualname = resolve_current_platform_cls_qualname()
platform = mini_platform.current_platform
heavy = sorted(m for m in ("torch", "numpy", "triton", "torch_npu") if m in sys.modules)
print({"heavy": heavy, "qualname": qualname, "repr": repr(platform)})
"""


def test_importing_and_resolving_never_imports_torch(sites):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINI_PLATFORM")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", NO_TORCH], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str({"heavy": [], "qualname": BUILTIN,
                                       "repr": f"<{BUILTIN.split('.')[-1]} device_type={BUILTIN.split('.')[-2]!r}>"})
