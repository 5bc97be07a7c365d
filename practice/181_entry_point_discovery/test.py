"""Tests of exercise 181: entry points from *.dist-info metadata, loaded on demand.

Each test builds a small site-packages directory next to this file (inside the run directory) and
puts it on sys.path, as an installed site-packages would be.
"""
import importlib
import os
import random
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest

import submission as sub

GROUP = "mini_platform.platform_plugins"
PROBE = "_probe_181"  # plugin modules written here record their import in sys.modules[PROBE].imported


@pytest.fixture
def site(monkeypatch):
    path = Path(tempfile.mkdtemp(prefix="site-", dir=os.path.dirname(os.path.abspath(__file__))))
    probe = types.ModuleType(PROBE)
    probe.imported = []
    monkeypatch.setitem(sys.modules, PROBE, probe)
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(str(path)):
            del sys.modules[name]
    shutil.rmtree(path, ignore_errors=True)


def write_dist(site, dirname, metadata, entry_points=None):
    info = site / f"{dirname}.dist-info"
    info.mkdir()
    if metadata is not None:
        (info / "METADATA").write_text(metadata, encoding="utf-8")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return info


def metadata(name, version="1.0", body=""):
    text = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: a plugin\n"
    return text + (f"\n{body}" if body else "")


def write_module(site, dotted, code=""):
    """Write module `dotted` (packages created as needed); it records its import in the probe."""
    parts = dotted.split(".")
    folder = site
    for package in parts[:-1]:
        folder = folder / package
        folder.mkdir(exist_ok=True)
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    target = folder / f"{parts[-1]}.py"
    if (folder / parts[-1]).is_dir():
        target = folder / parts[-1] / "__init__.py"
    target.write_text(f"import {PROBE}\n{PROBE}.imported.append(__name__)\n{code}\n", encoding="utf-8")
    importlib.invalidate_caches()


def imported():
    return sys.modules[PROBE].imported


def example_site(site):
    write_dist(site, "mini_ascend-0.3.0", metadata("mini-ascend", "0.3.0"),
               "[mini_platform.platform_plugins]\nascend = mini_ascend:register\n"
               "[console_scripts]\nascend-smi = mini_ascend.cli:main\n")
    write_dist(site, "broken_plugin-1.0", metadata("broken-plugin", "1.0"),
               "[mini_platform.platform_plugins]\nbroken = broken_plugin.detect:detect [npu]\n")
    write_module(site, "mini_ascend", "def register():\n    return 'mini_ascend.platform.NPUPlatform'")
    write_module(site, "broken_plugin.detect", "import torch_npu_not_installed_181\ndef detect():\n    return None")


# ---------------------------------------------------------------- the statement's example

def test_example_discover_imports_nothing(site):
    example_site(site)
    eps = sub.discover(site, GROUP)
    assert set(eps) == {"ascend", "broken"}
    assert eps["broken"] == sub.EntryPoint("broken", "broken_plugin.detect:detect", GROUP, "broken-plugin", "1.0")
    assert eps["ascend"] == sub.EntryPoint("ascend", "mini_ascend:register", GROUP, "mini-ascend", "0.3.0")
    assert imported() == [] and "mini_ascend" not in sys.modules and "broken_plugin" not in sys.modules


def test_example_load_group(site):
    example_site(site)
    loaded, failed = sub.load_group(site, GROUP)
    assert set(loaded) == {"ascend"} and loaded["ascend"]() == "mini_ascend.platform.NPUPlatform"
    assert failed == {"broken": "ModuleNotFoundError: No module named 'torch_npu_not_installed_181'"}


def test_example_allow_list_imports_only_the_allowed(site):
    example_site(site)
    loaded, failed = sub.load_group(site, GROUP, allowed=["ascend"])
    assert set(loaded) == {"ascend"} and failed == {}
    assert imported() == ["mini_ascend"]


# ---------------------------------------------------------------- parse_entry_points

def test_parse_comments_whitespace_extras_and_merging():
    text = (
        "# written by a build backend\n"
        "\n"
        "  [ mini_platform.platform_plugins ]  \n"
        "ascend=mini_ascend:register\n"
        "   ; a comment\n"
        "  Xpu  =  xpu_plugin.detect : Detector.detect   [gpu, fast]\n"
        "[empty.group]\n"
        "[mini_platform.general_plugins]\n"
        "patch = a.b:c=d\n"
        "[mini_platform.platform_plugins]\n"
        "mlu = mlu_plugin\n"
    )
    assert sub.parse_entry_points(text) == {
        "mini_platform.platform_plugins": {"ascend": "mini_ascend:register",
                                           "Xpu": "xpu_plugin.detect : Detector.detect",
                                           "mlu": "mlu_plugin"},
        "empty.group": {},
        "mini_platform.general_plugins": {"patch": "a.b:c=d"},
    }
    assert sub.parse_entry_points("") == {}


@pytest.mark.parametrize("text, line", [
    ("[g]\nok = a:b\njust some words\n", 3),
    ("# header\nname = a:b\n[g]\n", 2),
    ("[g]\n\n = a:b\n", 3),
    ("[g]\nname =   \n", 2),
    ("[g]\na = m:f\n[h]\na = m:g\n[g]\nb = m:h\n a = m:i\n", 7),
])
def test_parse_errors_name_the_line(text, line):
    with pytest.raises(ValueError) as info:
        sub.parse_entry_points(text)
    assert f"line {line}" in str(info.value)


# ---------------------------------------------------------------- discover

def test_discover_reads_only_metadata_headers(site):
    body = "Name: impostor\nVersion: 9.9\n\nA long description that mentions Name: impostor.\n"
    write_dist(site, "real_pkg-2.1", "Metadata-Version: 2.1\nVersion: 2.1\nName: real-pkg\n"
               "Requires-Dist: numpy\nRequires-Dist: torch\n\n" + body, f"[{GROUP}]\nreal = real_pkg:detect\n")
    write_dist(site, "nover-0", "Name: no-version\n", f"[{GROUP}]\nnover = nover:detect\n")
    eps = sub.discover(str(site), GROUP)  # a str works as well as a Path
    assert eps["real"].dist == "real-pkg" and eps["real"].version == "2.1"
    assert eps["nover"].dist == "no-version" and eps["nover"].version == ""


def test_metadata_headers_end_at_the_first_blank_line(site):
    # Name and Version only in the body: not a distribution / no version
    write_dist(site, "body_name-1.0", "Metadata-Version: 2.1\nSummary: x\n\nName: impostor\nVersion: 6.6\n",
               f"[{GROUP}]\nfake = fake:detect\n")
    write_dist(site, "body_version-1.0", "Name: body-version\n\nVersion: 6.6\n", f"[{GROUP}]\nbv = bv:detect\n")
    assert sub.discover(site, GROUP) == {"bv": sub.EntryPoint("bv", "bv:detect", GROUP, "body-version", "")}


def test_discover_skips_what_is_not_a_distribution(site):
    write_dist(site, "no_metadata-1.0", None, f"[{GROUP}]\nghost = ghost:detect\n")
    write_dist(site, "no_name-1.0", "Metadata-Version: 2.1\nVersion: 1.0\n", f"[{GROUP}]\nnameless = n:d\n")
    write_dist(site, "no_entry_points-1.0", metadata("plain"))
    egg = site / "old_style.egg-info"
    egg.mkdir()
    (egg / "METADATA").write_text(metadata("old-style"))
    (egg / "entry_points.txt").write_text(f"[{GROUP}]\nold = old:detect\n")
    (site / "loose.dist-info").write_text("not a directory")
    write_dist(site, "other_group-1.0", metadata("other-group"), "[console_scripts]\ntool = tool:main\n")
    write_dist(site, "good-1.0", metadata("good"), f"[{GROUP}]\ngood = good:detect\n")
    assert sub.discover(site, GROUP) == {"good": sub.EntryPoint("good", "good:detect", GROUP, "good", "1.0")}
    assert sub.discover(site, "no.such.group") == {}


def test_discover_rejects_a_name_registered_twice(site):
    write_dist(site, "alpha_plugin-1.0", metadata("alpha-plugin"), f"[{GROUP}]\nnpu = alpha_plugin:detect\n")
    write_dist(site, "beta_plugin-2.0", metadata("beta-plugin", "2.0"), f"[{GROUP}]\nnpu = beta_plugin:detect\n")
    with pytest.raises(ValueError) as info:
        sub.discover(site, GROUP)
    message = str(info.value)
    assert "npu" in message and "alpha-plugin" in message and "beta-plugin" in message
    assert sub.discover(site, "other.group") == {}


def test_discover_reports_a_broken_entry_points_file(site):
    write_dist(site, "fine-1.0", metadata("fine"), f"[{GROUP}]\nfine = fine:detect\n")
    write_dist(site, "mangled_plugin-0.1", metadata("mangled-plugin"), f"[{GROUP}]\nok = a:b\n<<<<<<< HEAD\n")
    with pytest.raises(ValueError) as info:
        sub.discover(site, GROUP)
    assert "mangled_plugin-0.1.dist-info" in str(info.value) and "line 3" in str(info.value)


# ---------------------------------------------------------------- load and load_group

def test_load_follows_module_and_attribute_paths(site):
    write_module(site, "deep.pkg.mod", "class Outer:\n    class Inner:\n        @staticmethod\n"
                 "        def detect():\n            return 'deep'\nVALUE = 41\n")
    ep = sub.EntryPoint("x", "deep.pkg.mod:Outer.Inner.detect", GROUP, "deep", "1")
    assert sub.load(ep)() == "deep"
    assert sub.load(sub.EntryPoint("y", "deep.pkg.mod:VALUE", GROUP, "deep", "1")) == 41
    module = sub.load(sub.EntryPoint("z", "deep.pkg.mod", GROUP, "deep", "1"))
    assert module is sys.modules["deep.pkg.mod"]
    assert imported().count("deep.pkg.mod") == 1


def test_load_group_skips_each_kind_of_broken_plugin_with_its_reason(site):
    lines = ["a_missing = nowhere_181_module:detect", "b_dependency = dep_plugin:detect",
             "c_attribute = attr_plugin:no_such_function", "d_raises = raising_plugin:detect",
             "e_syntax = syntax_plugin:detect", "f_good = good_plugin.sub:detect [extra]",
             "g_module = good_plugin"]
    write_dist(site, "many-1.0", metadata("many"), f"[{GROUP}]\n" + "\n".join(lines) + "\n")
    write_module(site, "dep_plugin", "import torch_npu_missing_181")
    write_module(site, "attr_plugin", "def detect():\n    return None")
    write_module(site, "raising_plugin", "raise RuntimeError('CANN toolkit not found')")
    write_module(site, "syntax_plugin", "def detect(:\n    pass")
    write_module(site, "good_plugin.sub", "def detect():\n    return 'good'")
    loaded, failed = sub.load_group(site, GROUP)
    assert set(loaded) == {"f_good", "g_module"} and loaded["f_good"]() == "good"
    assert loaded["g_module"] is sys.modules["good_plugin"]
    assert set(failed) == {"a_missing", "b_dependency", "c_attribute", "d_raises", "e_syntax"}
    assert failed["a_missing"] == "ModuleNotFoundError: No module named 'nowhere_181_module'"
    assert failed["b_dependency"] == "ModuleNotFoundError: No module named 'torch_npu_missing_181'"
    assert failed["c_attribute"].startswith("AttributeError: ") and "no_such_function" in failed["c_attribute"]
    assert failed["d_raises"] == "RuntimeError: CANN toolkit not found"
    assert failed["e_syntax"].startswith("SyntaxError: ")


def test_load_group_allow_list(site):
    write_dist(site, "trio-1.0", metadata("trio"),
               f"[{GROUP}]\none = plug_one:detect\ntwo = plug_two:detect\nthree = plug_three:detect\n")
    for name in ("plug_one", "plug_two", "plug_three"):
        write_module(site, name, "def detect():\n    return __name__")
    assert sub.load_group(site, GROUP, allowed=[]) == ({}, {})
    assert imported() == []
    loaded, failed = sub.load_group(site, GROUP, allowed=("three", "unknown", "one"))
    assert set(loaded) == {"one", "three"} and failed == {}
    assert sorted(imported()) == ["plug_one", "plug_three"]
    loaded, failed = sub.load_group(site, GROUP, allowed={"two"})
    assert loaded["two"]() == "plug_two" and "plug_two" in imported()


# ---------------------------------------------------------------- randomized, against an oracle

WORDS = ["ascend", "xpu", "mlu", "musa", "gaudi", "rocm", "tpu", "dcu", "hpu", "ipu", "vpu", "npu2"]
GROUPS = [GROUP, "mini_platform.general_plugins", "console_scripts"]
BROKEN = {  # kind -> (module code, reason the oracle expects, or a prefix when it ends with ': ')
    "good": ("def detect():\n    return __name__ + ':ok'", None),
    "dependency": ("import absent_dependency_181", "ModuleNotFoundError: No module named 'absent_dependency_181'"),
    "raises": ("raise ImportError('libascendcl.so: cannot open shared object file')",
               "ImportError: libascendcl.so: cannot open shared object file"),
    "attribute": ("def other():\n    return None", "AttributeError: "),
    "missing": (None, "ModuleNotFoundError: "),
}


def render_entry(rng, name, value):
    pad = lambda: " " * rng.randint(0, 3)  # noqa: E731
    extras = rng.choice(["", "", " [npu]", "  [a, b]", "[x]"])
    return f"{pad()}{name}{pad()}={pad()}{value}{extras}{pad()}"


def build_site(site, rng, tag):
    """Random distributions; returns what discover and load_group must find for GROUP."""
    expected_eps, expected_loaded, expected_failed = {}, {}, {}
    used = set()
    for d in range(rng.randint(2, 6)):
        dist = f"dist{d}-{rng.choice(WORDS)}"
        version = f"{rng.randint(0, 3)}.{rng.randint(0, 9)}"
        sections = {}
        groups = rng.sample(GROUPS[1:], rng.randint(0, 2)) + ([GROUP] if rng.random() < 0.8 else [])
        rng.shuffle(groups)
        for group in groups:
            entries = []
            for name in rng.sample(WORDS, rng.randint(1, 3)):
                if group == GROUP and name in used:
                    continue
                kind = rng.choice(["good", "good", "dependency", "raises", "attribute", "missing"])
                module = f"p{tag}_{d}_{name}"
                value = f"{module}:detect"
                entries.append((name, value))
                if group == GROUP:
                    used.add(name)
                    expected_eps[name] = sub.EntryPoint(name, value, GROUP, dist, version)
                    code, reason = BROKEN[kind]
                    if code is not None:
                        write_module(site, module, code)
                    if reason is None:
                        expected_loaded[name] = module + ":ok"
                    else:
                        expected_failed[name] = reason
            sections[group] = entries
        lines = []
        for group, entries in sections.items():
            if rng.random() < 0.3:
                lines.append(rng.choice(["# generated", "; comment", ""]))
            lines.append(f"[{group}]")
            lines.extend(render_entry(rng, name, value) for name, value in entries)
        write_dist(site, f"{dist.replace('-', '_')}-{version}", metadata(dist, version), "\n".join(lines) + "\n")
    return expected_eps, expected_loaded, expected_failed


@pytest.mark.parametrize("seed", range(6))
def test_randomized_sites_against_oracle(seed, site):
    rng = random.Random(181_000 + seed)
    eps, good, bad = build_site(site, rng, seed)
    repro = {"expected_entry_points": eps}  # shown on failure
    assert sub.discover(site, GROUP) == eps, f"seed={seed}"
    assert imported() == [], "discover must not import plugin modules"
    names = sorted(eps)
    allowed = None if rng.random() < 0.5 else rng.sample(names, rng.randint(0, len(names)))
    repro["allowed"] = allowed
    loaded, failed = sub.load_group(site, GROUP, allowed=allowed)
    keep = set(names) if allowed is None else set(allowed)
    assert set(loaded) == {n for n in good if n in keep}, f"seed={seed} allowed={allowed}"
    assert {n: loaded[n]() for n in loaded} == {n: good[n] for n in loaded}
    assert set(failed) == {n for n in bad if n in keep}, f"seed={seed} allowed={allowed}"
    for name, reason in failed.items():
        want = bad[name]
        assert reason.startswith(want) if want.endswith(": ") else reason == want, (name, reason, want)
    skipped = {eps[n].module for n in names if n not in keep}
    assert not skipped & set(imported()), "modules outside the allow-list were imported"
