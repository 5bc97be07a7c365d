"""Tests of exercise 180: platform resolution rules and device-API forwarding."""
import copy
import pickle
import random
import types

import pytest

import submission as sub

SELECT, TARGET, PLUGINS = "MINI_PLATFORM", "MINI_PLATFORM_TARGET_DEVICE", "MINI_PLATFORM_PLUGINS"


class Detector:
    """A detector that counts its calls: returns `result`, or raises `error` when given."""

    def __init__(self, result=None, error=None):
        self.result, self.error, self.calls = result, error, 0

    def __call__(self):
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.result


def on(qualname):
    return Detector(qualname)


def off():
    return Detector(None)


def boom(exc=None):
    return Detector(error=exc or RuntimeError("driver exploded"))


def resolve(builtin, oot, env):
    return sub.resolve_platform(builtin, oot, env)


def calls(detectors):
    return {name: d.calls for name, d in detectors.items()}


def resolution_error(builtin, oot, env):
    with pytest.raises(sub.PlatformResolutionError) as info:
        resolve(builtin, oot, env)
    return str(info.value)


# ---------------------------------------------------------------- the statement's example

def test_example_resolution():
    builtin = {"cpu": on("pkg.CpuPlatform"), "cuda": off()}
    oot = {"ascend": on("mini_ascend.NPUPlatform"), "tpu": off()}
    assert resolve(builtin, oot, {}) == "mini_ascend.NPUPlatform"
    assert resolve(builtin, oot, {PLUGINS: " tpu, "}) == "pkg.CpuPlatform"
    assert oot["ascend"].calls == 1  # only the first resolution called it
    assert "cuda" in resolution_error(builtin, oot, {SELECT: "cuda"})
    for d in (*builtin.values(), *oot.values()):
        d.calls = 0
    assert resolve(builtin, oot, {TARGET: "cpu"}) == "pkg.CpuPlatform"
    assert calls(builtin) == {"cpu": 1, "cuda": 0} and calls(oot) == {"ascend": 0, "tpu": 0}


def test_example_forwarding(device_modules):
    device_modules["npu"] = types.SimpleNamespace(device_count=lambda: 8)

    class NPUPlatform(sub.Platform):
        device_type = "npu"

    p = NPUPlatform()
    assert p.device_count() == 8
    with pytest.raises(AttributeError) as info:
        p.missing
    assert "missing" in str(info.value) and "npu" in str(info.value)
    q = copy.copy(p)
    assert type(q) is NPUPlatform and q is not p


# ---------------------------------------------------------------- rule 1: selection

def test_error_type_and_constant():
    assert issubclass(sub.PlatformResolutionError, RuntimeError)
    assert sub.UNSPECIFIED == "mini_platform.platforms.interface.UnspecifiedPlatform"
    assert resolve({"cpu": off()}, {}, {}) == sub.UNSPECIFIED


def test_selection_calls_only_the_chosen_detector():
    builtin = {"cpu": on("b.Cpu"), "cuda": boom()}
    oot = {"ascend": on("o.Ascend"), "xpu": on("o.Xpu"), "rocm": boom()}
    assert resolve(builtin, oot, {SELECT: "xpu"}) == "o.Xpu"
    assert calls(oot) == {"ascend": 0, "xpu": 1, "rocm": 0} and calls(builtin) == {"cpu": 0, "cuda": 0}


def test_selection_looks_in_out_of_tree_first_then_builtin():
    builtin = {"cpu": on("b.Cpu"), "rocm": on("b.Rocm")}
    oot = {"rocm": on("o.Rocm"), "ascend": on("o.Ascend")}
    assert resolve(builtin, oot, {SELECT: "rocm"}) == "o.Rocm"
    assert builtin["rocm"].calls == 0
    assert resolve(builtin, oot, {SELECT: "cpu"}) == "b.Cpu"
    assert calls(oot) == {"rocm": 1, "ascend": 0} and calls(builtin) == {"cpu": 1, "rocm": 0}


def test_selection_wins_over_target_device_and_allow_list():
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": on("o.Ascend"), "xpu": on("o.Xpu")}
    env = {SELECT: "ascend", TARGET: "cpu", PLUGINS: "xpu"}
    assert resolve(builtin, oot, env) == "o.Ascend"
    assert builtin["cpu"].calls == 0 and oot["xpu"].calls == 0


@pytest.mark.parametrize("blank", ["", " ", "\t  \n"])
def test_blank_selection_counts_as_unset(blank):
    builtin = {"cpu": on("b.Cpu"), "cuda": off()}
    oot = {"ascend": on("o.Ascend")}
    assert resolve(builtin, oot, {SELECT: blank}) == "o.Ascend"
    assert resolve(builtin, {}, {SELECT: blank, TARGET: "cpu"}) == "b.Cpu"


def test_selected_name_is_stripped():
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": on("o.Ascend"), "xpu": on("o.Xpu")}
    assert resolve(builtin, oot, {SELECT: " xpu\t"}) == "o.Xpu"
    assert calls(oot) == {"ascend": 0, "xpu": 1}


def test_selecting_an_unknown_name_is_an_error_naming_it():
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": on("o.Ascend")}
    assert "gaudi" in resolution_error(builtin, oot, {SELECT: "gaudi"})
    assert builtin["cpu"].calls == 0 and oot["ascend"].calls == 0


def test_selected_detector_returning_none_is_an_error_not_a_fallback():
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": off(), "xpu": on("o.Xpu")}
    assert "ascend" in resolution_error(builtin, oot, {SELECT: "ascend"})
    assert calls(oot) == {"ascend": 1, "xpu": 0} and builtin["cpu"].calls == 0


@pytest.mark.parametrize("exc", [RuntimeError("no driver"), ImportError("No module named 'torch_npu'"),
                                 KeyError("ASCEND_HOME"), OSError(2, "no such device")])
def test_selected_detector_raising_is_an_error_naming_it(exc):
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": boom(exc), "xpu": on("o.Xpu")}
    assert "ascend" in resolution_error(builtin, oot, {SELECT: "ascend"})
    assert calls(oot) == {"ascend": 1, "xpu": 0} and builtin["cpu"].calls == 0


# ---------------------------------------------------------------- rule 2: cpu target

def test_cpu_target_calls_only_the_builtin_cpu_detector():
    builtin = {"cpu": on("b.Cpu"), "cuda": on("b.Cuda")}
    oot = {"ascend": on("o.Ascend"), "cpu": on("o.Cpu")}
    assert resolve(builtin, oot, {TARGET: "cpu"}) == "b.Cpu"
    assert calls(builtin) == {"cpu": 1, "cuda": 0} and calls(oot) == {"ascend": 0, "cpu": 0}


@pytest.mark.parametrize("cpu", [off(), boom()], ids=["none", "raises"])
def test_cpu_target_with_unavailable_cpu_is_an_error(cpu):
    builtin = {"cpu": cpu, "cuda": on("b.Cuda")}
    oot = {"ascend": on("o.Ascend")}
    with pytest.raises(sub.PlatformResolutionError):
        resolve(builtin, oot, {TARGET: "cpu"})
    assert cpu.calls == 1 and builtin["cuda"].calls == 0 and oot["ascend"].calls == 0


@pytest.mark.parametrize("target", [" CPU ", "Cpu", "cpu\n"])
def test_cpu_target_is_stripped_and_case_insensitive(target):
    builtin = {"cpu": on("b.Cpu"), "cuda": on("b.Cuda")}
    oot = {"ascend": on("o.Ascend")}
    assert resolve(builtin, oot, {TARGET: target}) == "b.Cpu"
    assert calls(builtin) == {"cpu": 1, "cuda": 0} and calls(oot) == {"ascend": 0}


@pytest.mark.parametrize("target", ["cuda", "npu", "", "cpux"])
def test_other_targets_do_not_short_circuit(target):
    builtin = {"cpu": on("b.Cpu"), "cuda": off()}
    oot = {"ascend": on("o.Ascend")}
    assert resolve(builtin, oot, {TARGET: target}) == "o.Ascend"


# ---------------------------------------------------------------- rule 3: allow-list

@pytest.mark.parametrize("value", ["xpu", " xpu ", "xpu,", ",, xpu ,", "gaudi, xpu", "xpu,xpu"])
def test_allow_list_items_are_stripped_and_empty_items_ignored(value):
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": on("o.Ascend"), "xpu": on("o.Xpu"), "rocm": boom()}
    assert resolve(builtin, oot, {PLUGINS: value}) == "o.Xpu"
    assert calls(oot) == {"ascend": 0, "xpu": 1, "rocm": 0}


@pytest.mark.parametrize("value", ["", " ", ",", " , ,"])
def test_empty_allow_list_allows_no_plugin(value):
    builtin = {"cpu": on("b.Cpu"), "cuda": off()}
    oot = {"ascend": on("o.Ascend"), "xpu": boom()}
    assert resolve(builtin, oot, {PLUGINS: value}) == "b.Cpu"
    assert calls(oot) == {"ascend": 0, "xpu": 0} and calls(builtin) == {"cpu": 1, "cuda": 1}


def test_allow_list_matches_whole_names():
    builtin = {"cpu": on("b.Cpu")}
    oot = {"xpu": on("o.Xpu"), "ascend": on("o.Ascend"), "xpu2": off()}
    assert resolve(builtin, oot, {PLUGINS: "xpu2, ascend_v2"}) == "b.Cpu"   # neither 'xpu' nor 'ascend' is listed
    assert calls(oot) == {"xpu": 0, "ascend": 0, "xpu2": 1}


def test_allow_list_does_not_filter_builtins():
    builtin = {"cpu": off(), "cuda": on("b.Cuda")}
    oot = {"ascend": on("o.Ascend")}
    assert resolve(builtin, oot, {PLUGINS: "cpu"}) == "b.Cuda"
    assert oot["ascend"].calls == 0


def test_absent_allow_list_considers_every_plugin():
    oot = {"ascend": off(), "xpu": off(), "mlu": on("o.Mlu")}
    assert resolve({"cpu": on("b.Cpu")}, oot, {}) == "o.Mlu"
    assert calls(oot) == {"ascend": 1, "xpu": 1, "mlu": 1}


# ---------------------------------------------------------------- rules 4-6

def test_one_active_plugin_wins_over_active_builtins():
    builtin = {"cpu": on("b.Cpu"), "cuda": on("b.Cuda")}  # two active built-ins would be an error
    oot = {"ascend": on("o.Ascend"), "xpu": off()}
    assert resolve(builtin, oot, {}) == "o.Ascend"
    assert calls(oot) == {"ascend": 1, "xpu": 1}
    assert all(n <= 1 for n in calls(builtin).values())


def test_two_active_plugins_is_an_error_naming_all_of_them():
    builtin = {"cpu": on("b.Cpu")}
    oot = {"ascend": on("o.Ascend"), "xpu": off(), "mlu": on("o.Mlu"), "musa": on("o.Musa"), "hpu": boom()}
    message = resolution_error(builtin, oot, {})
    assert all(name in message for name in ("ascend", "mlu", "musa")), message
    assert calls(oot) == {"ascend": 1, "xpu": 1, "mlu": 1, "musa": 1, "hpu": 1}


def test_a_raising_detector_counts_as_inactive():
    oot = {"ascend": boom(ImportError("No module named 'torch_npu'")), "xpu": on("o.Xpu")}
    assert resolve({"cpu": on("b.Cpu")}, oot, {}) == "o.Xpu"
    builtin = {"cpu": on("b.Cpu"), "cuda": boom()}
    assert resolve(builtin, {"ascend": boom()}, {}) == "b.Cpu"
    assert calls(builtin) == {"cpu": 1, "cuda": 1}


def test_builtins_decide_when_no_plugin_is_active():
    builtin = {"cpu": off(), "cuda": on("b.Cuda")}
    assert resolve(builtin, {"ascend": off()}, {}) == "b.Cuda"
    assert calls(builtin) == {"cpu": 1, "cuda": 1}
    message = resolution_error({"cpu": on("b.Cpu"), "cuda": on("b.Cuda"), "rocm": off()}, {}, {})
    assert "cpu" in message and "cuda" in message
    assert resolve({"cpu": off(), "cuda": boom()}, {"ascend": off()}, {}) == sub.UNSPECIFIED


def test_env_may_be_any_read_only_mapping():
    env = types.MappingProxyType({PLUGINS: "xpu", TARGET: "npu"})
    assert resolve({"cpu": on("b.Cpu")}, {"ascend": on("o.Ascend"), "xpu": on("o.Xpu")}, env) == "o.Xpu"


# ---------------------------------------------------------------- randomized, against an oracle

def expected_resolution(builtin, oot, env):
    """Independent statement of the rules.

    builtin, oot: name -> "on" | "off" | "raise". Returns (outcome, bounds): outcome is
    ("ok", qualname) or ("error", names the message must contain); bounds maps (kind, name) to
    the (fewest, most) calls allowed.
    """
    bounds = {(kind, n): (0, 0) for kind, specs in (("b", builtin), ("o", oot)) for n in specs}

    def qualname(kind, name):
        return f"{kind}_{name}.Platform"

    def active(kind, specs, names):
        for n in names:
            bounds[(kind, n)] = (1, 1)
        return [n for n in names if specs[n] == "on"]

    chosen = env.get(SELECT, "")
    if chosen.strip():
        kind, specs = ("o", oot) if chosen in oot else ("b", builtin) if chosen in builtin else (None, None)
        if kind is None:
            return ("error", [chosen]), bounds
        bounds[(kind, chosen)] = (1, 1)
        if specs[chosen] != "on":
            return ("error", [chosen]), bounds
        return ("ok", qualname(kind, chosen)), bounds

    if env.get(TARGET, "").strip().lower() == "cpu":
        bounds[("b", "cpu")] = (1, 1)
        return (("ok", qualname("b", "cpu")) if builtin["cpu"] == "on" else ("error", [])), bounds

    listed = env.get(PLUGINS)
    allowed = None if listed is None else {part.strip() for part in listed.split(",") if part.strip()}
    oot_active = active("o", oot, [n for n in oot if allowed is None or n in allowed])
    if oot_active:
        for n in builtin:
            bounds[("b", n)] = (0, 1)
        if len(oot_active) > 1:
            return ("error", oot_active), bounds
        return ("ok", qualname("o", oot_active[0])), bounds
    builtin_active = active("b", builtin, list(builtin))
    if len(builtin_active) > 1:
        return ("error", builtin_active), bounds
    if builtin_active:
        return ("ok", qualname("b", builtin_active[0])), bounds
    return ("ok", sub.UNSPECIFIED), bounds


OOT_POOL = ["ascend", "xpu", "rocm", "mlu", "musa", "gaudi", "tpu", "dcu"]
BUILTIN_POOL = ["cuda", "rocm", "xpu"]
ERRORS = [RuntimeError, ImportError, KeyError, ValueError, OSError, ZeroDivisionError]


def random_case(rng):
    states = ["on", "off", "raise"]
    builtin = {"cpu": rng.choice(states)}
    builtin.update({n: rng.choice(states) for n in rng.sample(BUILTIN_POOL, rng.randint(0, 2))})
    oot = {n: rng.choice(states) for n in rng.sample(OOT_POOL, rng.randint(0, 5))}
    env = {}
    names = list(oot) + list(builtin) + ["nosuch"]
    roll = rng.random()
    if roll < 0.25:
        env[SELECT] = rng.choice(names)
    elif roll < 0.35:
        env[SELECT] = rng.choice(["", " ", "\t"])
    if rng.random() < 0.3:
        env[TARGET] = rng.choice(["cpu", "cpu", "cuda", "npu", ""])
    if rng.random() < 0.6:
        items = [n for n in OOT_POOL + ["cuda", "nosuch"] if rng.random() < 0.3]
        items += [""] * rng.randint(0, 2)
        rng.shuffle(items)
        env[PLUGINS] = ",".join(" " * rng.randint(0, 2) + item + " " * rng.randint(0, 2) for item in items)
    return builtin, oot, env


def build(kind, specs, rng):
    detectors = {}
    for name, state in specs.items():
        if state == "on":
            detectors[name] = on(f"{kind}_{name}.Platform")
        elif state == "off":
            detectors[name] = off()
        else:
            detectors[name] = boom(rng.choice(ERRORS)(f"{name} probe failed"))
    return detectors


@pytest.mark.parametrize("seed", range(4))
def test_randomized_resolution_against_oracle(seed):
    rng = random.Random(180_000 + seed)
    for case in range(60):
        builtin_spec, oot_spec, env = random_case(rng)
        (kind, value), bounds = expected_resolution(builtin_spec, oot_spec, env)
        builtin, oot = build("b", builtin_spec, rng), build("o", oot_spec, rng)
        where = f"seed={seed} case={case} builtin={builtin_spec} oot={oot_spec} env={env}"
        repro = {"case": case, "builtin": builtin_spec, "oot": oot_spec, "env": env}  # noqa: F841 - shown on failure
        if kind == "ok":
            assert resolve(builtin, oot, env) == value, where
        else:
            with pytest.raises(sub.PlatformResolutionError) as info:
                resolve(builtin, oot, env)
            for name in value:
                assert name in str(info.value), f"{where}: the message {str(info.value)!r} should name {name!r}"
        for (side, name), (lo, hi) in bounds.items():
            n = (builtin if side == "b" else oot)[name].calls
            label = "built-in" if side == "b" else "out-of-tree"
            assert lo <= n <= hi, f"{where}: {label} detector {name!r} was called {n} times, expected {lo}..{hi}"


# ---------------------------------------------------------------- forwarding

@pytest.fixture
def device_modules():
    """sub.DEVICE_MODULES itself, restored after the test."""
    saved = dict(sub.DEVICE_MODULES)
    yield sub.DEVICE_MODULES
    sub.DEVICE_MODULES.clear()
    sub.DEVICE_MODULES.update(saved)


def device_module(name, **attrs):
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def npu_platform_class():
    return type("NPUPlatform", (sub.Platform,), {"device_type": "npu"})


def test_forwards_to_the_device_module_looked_up_at_access_time(device_modules):
    p, n = sub.Platform(), npu_platform_class()()
    assert sub.Platform.device_type == "cpu"
    device_modules["cpu"] = device_module("fake_cpu", synchronize=lambda: "cpu sync", _lazy_init=lambda: "init")
    device_modules["npu"] = device_module("fake_npu", synchronize=lambda: "npu sync", device_count=lambda: 8)
    assert p.synchronize() == "cpu sync" and n.synchronize() == "npu sync"
    assert n.device_count() == 8
    assert p._lazy_init() == "init"  # one leading underscore is an ordinary name
    device_modules["npu"] = device_module("fake_npu2", synchronize=lambda: "replaced")
    assert n.synchronize() == "replaced"


def test_class_and_instance_attributes_win(device_modules):
    class Own(npu_platform_class()):
        dist_backend = "hccl"

        def synchronize(self):
            return "own"

    device_modules["npu"] = device_module("fake_npu", dist_backend="nccl", synchronize=lambda: "module",
                                          device_type="cuda", memory=1, empty_cache=lambda: "emptied",
                                          default_generator=None, reserved=0)
    p = Own()
    p.memory = 2
    assert p.dist_backend == "hccl" and p.synchronize() == "own" and p.device_type == "npu"
    assert p.memory == 2
    assert p.empty_cache() == "emptied"
    # an attribute whose value is None or 0 exists all the same: it is forwarded
    assert (p.default_generator, p.reserved) == (None, 0)


def test_dunder_names_are_never_forwarded(device_modules):
    device_modules["npu"] = device_module("fake_npu", __custom__=1, __deepcopy__=lambda memo: "forwarded",
                                          __setstate__=lambda state: None, visible=True)
    p = npu_platform_class()()
    assert p.visible is True
    for name in ("__custom__", "__deepcopy__", "__setstate__", "__wrapped__"):
        with pytest.raises(AttributeError):
            getattr(p, name)
        assert not hasattr(p, name)


def test_names_with_double_underscores_at_one_end_only_are_forwarded(device_modules):
    device_modules["npu"] = device_module("fake_npu", __private=1, tail__=2, _x_=3, ____=4)
    p = npu_platform_class()()
    assert (getattr(p, "__private"), getattr(p, "tail__"), getattr(p, "_x_")) == (1, 2, 3)
    with pytest.raises(AttributeError):
        getattr(p, "____")                  # starts and ends with "__"


def test_copy_and_pickle_give_equal_objects(device_modules):
    poison = dict(__setstate__=lambda state: None, __deepcopy__=lambda memo: "forwarded",
                  __getnewargs_ex__=lambda: ((), {}), __reduce__=lambda: "forwarded", current_device=lambda: 3)
    device_modules["cpu"] = device_module("fake_cpu", **poison)
    device_modules["npu"] = device_module("fake_npu", **poison)
    NPUPlatform = npu_platform_class()
    p = NPUPlatform()
    p.rank = 5
    for q in (copy.copy(p), copy.deepcopy(p)):
        assert type(q) is NPUPlatform and q is not p and q.rank == 5 and q.current_device() == 3
    base = sub.Platform()
    base.rank = 7
    r = pickle.loads(pickle.dumps(base))
    assert type(r) is sub.Platform and r.rank == 7 and r.current_device() == 3


def test_missing_attribute_names_it_and_the_device_type(device_modules):
    device_modules["npu"] = device_module("fake_npu", synchronize=lambda: None)
    p = npu_platform_class()()
    assert p.synchronize() is None
    with pytest.raises(AttributeError) as info:
        p.mem_get_info
    assert "mem_get_info" in str(info.value) and "npu" in str(info.value)
    assert getattr(p, "mem_get_info", "default") == "default"


def test_unknown_device_type_has_no_attributes(device_modules):
    class TPUPlatform(sub.Platform):
        device_type = "tpu"

    device_modules["cpu"] = device_module("fake_cpu", synchronize=lambda: "cpu")
    device_modules["npu"] = device_module("fake_npu", synchronize=lambda: "npu")
    assert npu_platform_class()().synchronize() == "npu"
    t = TPUPlatform()
    with pytest.raises(AttributeError) as info:
        t.synchronize
    assert "synchronize" in str(info.value) and "tpu" in str(info.value)


@pytest.mark.parametrize("seed", range(3))
def test_randomized_forwarding(seed, device_modules):
    rng = random.Random(1800 + seed)
    words = ["sync", "count", "stream", "event", "memory", "graph", "seed", "props", "init", "mode"]
    types_ = ["cpu", "cuda", "npu", "xpu", "mlu"]
    classes = {t: type(f"Platform{i}", (sub.Platform,), {"device_type": t, "own_" + t: t})
               for i, t in enumerate(types_)}
    for _ in range(40):
        device_modules.clear()
        content = {}
        for t in rng.sample(types_, rng.randint(0, len(types_))):
            attrs = {w: f"{t}:{w}:{rng.random()}" for w in words if rng.random() < 0.5}
            device_modules[t] = device_module("fake_" + t, **attrs)
            content[t] = attrs
        t = rng.choice(types_)
        p = classes[t]()
        for w in rng.sample(words, 5) + ["own_" + t]:
            repro = {"device_type": t, "device_modules": content, "attribute": w}  # noqa: F841 - shown on failure
            if w == "own_" + t:
                assert getattr(p, w) == t
            elif w in content.get(t, {}):
                assert getattr(p, w) == content[t][w], (t, w)
            else:
                with pytest.raises(AttributeError) as info:
                    getattr(p, w)
                assert w in str(info.value) and t in str(info.value)
