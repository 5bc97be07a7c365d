"""Tests of exercise 183: components named by qualified-name strings, imported on first use.

Component modules are written into a directory next to this file (inside the run directory) that
is put on sys.path; each records its import in sys.modules[PROBE].imported.
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

PROBE = "_probe_183"


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


def write_module(site, dotted, code=""):
    """Write module `dotted` (packages created as needed); importing it records it in the probe."""
    parts = dotted.split(".")
    folder = site
    for package in parts[:-1]:
        folder = folder / package
        folder.mkdir(exist_ok=True)
        if not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / f"{parts[-1]}.py").write_text(f"import {PROBE}\n{PROBE}.imported.append(__name__)\n{code}\n",
                                           encoding="utf-8")
    importlib.invalidate_caches()


def imported():
    return sys.modules[PROBE].imported


def role_method(qualname):
    return classmethod(lambda cls: qualname)


def platform_class(name, base=object, **roles):
    """A platform class with get_<role>_cls classmethods returning the given names."""
    return type(name, (base,), {f"get_{role}_cls": role_method(q) for role, q in roles.items()})


class Platform:
    @classmethod
    def get_attn_backend_cls(cls):
        return "mini_platform_183.paged_attention.PagedAttention"

    @classmethod
    def get_device_communicator_cls(cls):
        return "mini_cpu_183.communicator.GlooCommunicator"

    @classmethod
    def get_device_name(cls):  # not a role: does not end in _cls
        return "cpu"

    @classmethod
    def get_cls_count(cls):  # not a role either
        return 0

    @classmethod
    def get_attn_backend_cls_legacy(cls):  # nor this one: the name must end in _cls
        return "legacy_183.attention.OldBackend"


class NPUPlatform(Platform):
    @classmethod
    def get_attn_backend_cls(cls):
        return "mini_ascend_183.attention.AscendAttentionBackend"


def example_site(site):
    write_module(site, "mini_cpu_183.communicator", "class GlooCommunicator:\n    pass")
    write_module(site, "mini_cpu_183.attention", "class TorchSDPA:\n    pass")
    write_module(site, "mini_ascend_183.attention", "import torch_npu_absent_183\nclass AscendAttentionBackend:\n    pass")


# ---------------------------------------------------------------- the statement's example

def test_example_components_import_on_first_use(site):
    example_site(site)
    c = sub.Components(NPUPlatform, env={})
    assert c.roles() == ["attn_backend", "device_communicator"]
    assert imported() == [] and c.loaded() == []
    comm = c.get("device_communicator")
    assert comm is sys.modules["mini_cpu_183.communicator"].GlooCommunicator
    assert c.loaded() == ["device_communicator"] and imported() == ["mini_cpu_183.communicator"]
    with pytest.raises(ImportError) as info:
        c.get("attn_backend")
    message = str(info.value)
    assert "mini_ascend_183.attention.AscendAttentionBackend" in message and "torch_npu_absent_183" in message
    assert c.loaded() == ["device_communicator"]


def test_example_environment_override(site):
    example_site(site)
    env = {"MINI_PLATFORM_ATTN_BACKEND": "mini_cpu_183.attention.TorchSDPA"}
    c = sub.Components(NPUPlatform, env=env)
    assert c.qualname("attn_backend") == "mini_cpu_183.attention.TorchSDPA"
    assert c.get("attn_backend") is sys.modules["mini_cpu_183.attention"].TorchSDPA
    with pytest.raises(ValueError) as info:
        sub.Components(NPUPlatform, env={"MINI_PLATFORM_ATTN_BACKEND": "TorchSDPA"})
    assert "MINI_PLATFORM_ATTN_BACKEND" in str(info.value) and "attn_backend" in str(info.value)


# ---------------------------------------------------------------- resolve_obj_by_qualname

def test_resolve_returns_the_named_object(site):
    write_module(site, "deep_183.pkg.layers", "class Attention:\n    pass\ndef make():\n    return 1\nBLOCK = 16")
    module = importlib.import_module("deep_183.pkg.layers")
    assert sub.resolve_obj_by_qualname("deep_183.pkg.layers.Attention") is module.Attention
    assert sub.resolve_obj_by_qualname("deep_183.pkg.layers.make") is module.make
    assert sub.resolve_obj_by_qualname("deep_183.pkg.layers.BLOCK") == 16
    assert sub.resolve_obj_by_qualname("deep_183.pkg.layers") is module  # a module is an attribute of its package
    assert sub.resolve_obj_by_qualname("collections.OrderedDict") is __import__("collections").OrderedDict


@pytest.mark.parametrize("bad", ["", "Name", ".a.b", "a..b", "a.b.", "a.1b", "a b.c", "a.b-c", "a.b.c ", " "])
def test_resolve_rejects_malformed_names(bad):
    with pytest.raises(ValueError):
        sub.resolve_obj_by_qualname(bad)


def test_resolve_missing_module(site):
    with pytest.raises(ImportError) as info:
        sub.resolve_obj_by_qualname("nowhere_183.backend.Backend")
    assert "nowhere_183.backend.Backend" in str(info.value) and "nowhere_183" in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_resolve_module_whose_dependency_is_missing(site):
    write_module(site, "needs_npu_183", "import torch_npu_missing_183\nclass Backend:\n    pass")
    with pytest.raises(ImportError) as info:
        sub.resolve_obj_by_qualname("needs_npu_183.Backend")
    assert "needs_npu_183.Backend" in str(info.value) and "torch_npu_missing_183" in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
    assert info.value.__cause__.name == "torch_npu_missing_183"


def test_resolve_missing_attribute_is_an_import_error(site):
    write_module(site, "has_other_183", "class Other:\n    pass")
    with pytest.raises(ImportError) as info:
        sub.resolve_obj_by_qualname("has_other_183.Backend")
    assert "has_other_183" in str(info.value) and "Backend" in str(info.value)


def test_resolve_passes_other_errors_through(site):
    write_module(site, "raises_183", "raise RuntimeError('ACL init failed: error 507033')")
    with pytest.raises(RuntimeError) as info:
        sub.resolve_obj_by_qualname("raises_183.Backend")
    assert str(info.value) == "ACL init failed: error 507033"
    # an AttributeError raised while the module runs is not a missing attribute of the module
    write_module(site, "attr_fails_183", "import types\ntypes.NoSuchThing\nclass Backend:\n    pass")
    with pytest.raises(AttributeError) as info:
        sub.resolve_obj_by_qualname("attr_fails_183.Backend")
    assert not isinstance(info.value, ImportError) and "NoSuchThing" in str(info.value)


# ---------------------------------------------------------------- Components

def test_roles_come_from_get_role_cls_methods_including_inherited(site):
    Sub = platform_class("Sub", NPUPlatform, graph_wrapper="pkg_183.graphs.Wrapper")
    c = sub.Components(Sub, env={})
    assert c.roles() == ["attn_backend", "device_communicator", "graph_wrapper"]
    assert c.qualname("attn_backend") == "mini_ascend_183.attention.AscendAttentionBackend"
    assert c.qualname("device_communicator") == "mini_cpu_183.communicator.GlooCommunicator"
    assert c.qualname("graph_wrapper") == "pkg_183.graphs.Wrapper"
    assert sub.Components(Sub(), env={}).roles() == c.roles()  # an instance works too
    assert sub.Components(object, env={}).roles() == []
    assert imported() == []


def test_blank_or_unrelated_variables_do_not_override():
    env = {"MINI_PLATFORM_ATTN_BACKEND": "  ", "MINI_PLATFORM_GRAPH_WRAPPER": "x.y.Z", "ATTN_BACKEND": "a.b.C",
           "MINI_PLATFORM_DEVICE_COMMUNICATOR": "\tcomm_183.hccl.HcclCommunicator \n"}
    c = sub.Components(NPUPlatform, env=env)
    assert c.roles() == ["attn_backend", "device_communicator"]
    assert c.qualname("attn_backend") == "mini_ascend_183.attention.AscendAttentionBackend"
    assert c.qualname("device_communicator") == "comm_183.hccl.HcclCommunicator"


def test_env_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("MINI_PLATFORM_ATTN_BACKEND", "from_os_183.attn.Backend")
    assert sub.Components(NPUPlatform).qualname("attn_backend") == "from_os_183.attn.Backend"
    monkeypatch.delenv("MINI_PLATFORM_ATTN_BACKEND")
    assert sub.Components(NPUPlatform).qualname("attn_backend") == "mini_ascend_183.attention.AscendAttentionBackend"


def test_malformed_names_are_reported_at_construction(site):
    Bad = platform_class("Bad", Platform, kv_connector="KVConnector")
    with pytest.raises(ValueError) as info:
        sub.Components(Bad, env={})
    assert "kv_connector" in str(info.value) and "get_kv_connector_cls" in str(info.value)
    with pytest.raises(ValueError) as info:
        sub.Components(NPUPlatform, env={"MINI_PLATFORM_DEVICE_COMMUNICATOR": "comm..Hccl"})
    assert "device_communicator" in str(info.value) and "MINI_PLATFORM_DEVICE_COMMUNICATOR" in str(info.value)
    # only the final name must be well formed: a valid override of a malformed default is fine
    fixed = sub.Components(Bad, env={"MINI_PLATFORM_KV_CONNECTOR": "kv_183.connector.KVConnector"})
    assert fixed.qualname("kv_connector") == "kv_183.connector.KVConnector"
    assert imported() == []


def test_a_method_returning_a_non_string_is_a_type_error():
    Odd = platform_class("Odd", Platform, graph_wrapper=None)
    with pytest.raises(TypeError) as info:
        sub.Components(Odd, env={})
    assert "get_graph_wrapper_cls" in str(info.value)
    with pytest.raises(TypeError) as info:   # overriding the role does not skip the method's check
        sub.Components(Odd, env={"MINI_PLATFORM_GRAPH_WRAPPER": "graphs_183.wrapper.Graph"})
    assert "get_graph_wrapper_cls" in str(info.value)


def test_unknown_role_is_a_key_error_naming_it():
    c = sub.Components(NPUPlatform, env={})
    for call in (c.get, c.qualname):
        with pytest.raises(KeyError) as info:
            call("moe_router")
        assert "moe_router" in str(info.value)


def test_get_caches_and_never_imports_twice(site):
    example_site(site)
    c = sub.Components(Platform, env={})
    first = c.get("device_communicator")
    del sys.modules["mini_cpu_183.communicator"]
    assert c.get("device_communicator") is first
    assert imported() == ["mini_cpu_183.communicator"]


def test_a_failed_import_is_not_cached(site):
    c = sub.Components(Platform, env={})
    with pytest.raises(ImportError):
        c.get("attn_backend")
    assert c.loaded() == []
    write_module(site, "mini_platform_183.paged_attention", "class PagedAttention:\n    pass")
    assert c.get("attn_backend") is sys.modules["mini_platform_183.paged_attention"].PagedAttention
    assert c.loaded() == ["attn_backend"]


# ---------------------------------------------------------------- randomized, against an oracle

ROLES = ["attn_backend", "device_communicator", "graph_wrapper", "kv_connector", "moe_router", "sampler"]


@pytest.mark.parametrize("seed", range(5))
def test_randomized_platforms_against_oracle(seed, site):
    rng = random.Random(183_000 + seed)
    outcome = {}  # qualname -> "ok" | "no_module" | "no_attr" | "dependency"

    def new_component(role, tag):
        module, cls = f"c{seed}_{role}_{tag}.impl", f"Impl{tag}"
        kind = rng.choice(["ok", "ok", "ok", "no_module", "no_attr", "dependency"])
        if kind == "ok":
            write_module(site, module, f"class {cls}:\n    pass")
        elif kind == "no_attr":
            write_module(site, module, "class Unrelated:\n    pass")
        elif kind == "dependency":
            write_module(site, module, f"import missing_dep_183_{seed}\nclass {cls}:\n    pass")
        qualname = f"{module}.{cls}"
        outcome[qualname] = kind
        return qualname

    base_roles = {r: new_component(r, "base") for r in rng.sample(ROLES, rng.randint(1, 4))}
    child_roles = {r: new_component(r, "child") for r in rng.sample(ROLES, rng.randint(0, 3))}
    Base = platform_class("Base", object, **base_roles)
    Child = platform_class("Child", Base, **child_roles)
    expected = {**base_roles, **child_roles}
    env = {}
    for role in rng.sample(sorted(expected), rng.randint(0, len(expected))):
        variable = "MINI_PLATFORM_" + role.upper()
        if rng.random() < 0.3:
            env[variable] = rng.choice(["", "   "])
        else:
            expected[role] = new_component(role, "env")
            env[variable] = " " * rng.randint(0, 2) + expected[role] + " " * rng.randint(0, 2)

    c = sub.Components(Child, env=env)
    assert c.roles() == sorted(expected), f"seed={seed}"
    assert {r: c.qualname(r) for r in expected} == expected, f"seed={seed}"
    assert imported() == [], "the constructor must not import components"

    loaded = set()
    for step in range(12):
        role = rng.choice(sorted(expected))
        kind = outcome[expected[role]]
        if kind == "ok":
            module, _, cls = expected[role].rpartition(".")
            got = c.get(role)
            assert got is getattr(importlib.import_module(module), cls), f"seed={seed} step={step} role={role}"
            loaded.add(role)
        else:
            with pytest.raises(ImportError) as info:
                c.get(role)
            module, _, cls = expected[role].rpartition(".")
            wanted = [module, cls] if kind == "no_attr" else [expected[role]]
            assert all(w in str(info.value) for w in wanted), f"seed={seed} role={role}: {info.value}"
        assert c.loaded() == sorted(loaded), f"seed={seed} step={step}"
    for role in loaded:
        module = expected[role].rpartition(".")[0]
        assert imported().count(module) == 1, f"{module} was imported more than once"
