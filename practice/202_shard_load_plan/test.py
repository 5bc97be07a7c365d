"""Tests of exercise 202: the load plan of a sharded checkpoint."""
import random

import pytest

import submission as sub

PACKED = {"qkv_proj": [("q_proj", 4), ("k_proj", 2), ("v_proj", 2)]}


def test_example():
    weight_map = {"layers.0.attn.q_proj.weight": "a.safetensors", "layers.0.attn.k_proj.weight": "b.safetensors",
                  "layers.0.attn.v_proj.weight": "b.safetensors", "norm.weight": "a.safetensors",
                  "layers.0.attn.rotary_emb.inv_freq": "a.safetensors"}
    params = {"layers.0.attn.qkv_proj.weight": 8, "norm.weight": 4}
    assert sub.plan_loading(weight_map, params, PACKED, ignore_suffixes=(".inv_freq",)) == {
        "a.safetensors": [("layers.0.attn.q_proj.weight", "layers.0.attn.qkv_proj.weight", 0, 4),
                          ("norm.weight", "norm.weight", 0, 4)],
        "b.safetensors": [("layers.0.attn.k_proj.weight", "layers.0.attn.qkv_proj.weight", 4, 6),
                          ("layers.0.attn.v_proj.weight", "layers.0.attn.qkv_proj.weight", 6, 8)]}
    with pytest.raises(sub.LoadPlanError, match=r"layers\.0\.attn\.rotary_emb\.inv_freq"):
        sub.plan_loading(weight_map, params, PACKED)


def test_error_type():
    assert issubclass(sub.LoadPlanError, ValueError)


def test_bias_and_gate_up():
    packed = {**PACKED, "gate_up_proj": [("gate_proj", 5), ("up_proj", 5)]}
    params = {"l.attn.qkv_proj.bias": 8, "l.mlp.gate_up_proj.weight": 10, "l.mlp.down_proj.weight": 3}
    names = ["l.attn.q_proj.bias", "l.attn.k_proj.bias", "l.attn.v_proj.bias", "l.mlp.gate_proj.weight",
             "l.mlp.up_proj.weight", "l.mlp.down_proj.weight"]
    plan = sub.plan_loading({n: "m.safetensors" for n in names}, params, packed)
    assert plan == {"m.safetensors": sorted([
        ("l.attn.q_proj.bias", "l.attn.qkv_proj.bias", 0, 4), ("l.attn.k_proj.bias", "l.attn.qkv_proj.bias", 4, 6),
        ("l.attn.v_proj.bias", "l.attn.qkv_proj.bias", 6, 8),
        ("l.mlp.gate_proj.weight", "l.mlp.gate_up_proj.weight", 0, 5),
        ("l.mlp.up_proj.weight", "l.mlp.gate_up_proj.weight", 5, 10),
        ("l.mlp.down_proj.weight", "l.mlp.down_proj.weight", 0, 3)])}


def test_only_the_module_component_counts():
    # "qkv_proj" elsewhere in the name (not as the module) does not make a parameter packed.
    name = "qkv_proj.norm.weight"
    assert sub.plan_loading({name: "x"}, {name: 2}, PACKED) == {"x": [(name, name, 0, 2)]}


def test_a_packed_parameter_without_a_prefix():
    weight_map = {"q_proj.weight": "x", "k_proj.weight": "x", "v_proj.weight": "y"}
    assert sub.plan_loading(weight_map, {"qkv_proj.weight": 8}, PACKED) == {
        "x": [("k_proj.weight", "qkv_proj.weight", 4, 6), ("q_proj.weight", "qkv_proj.weight", 0, 4)],
        "y": [("v_proj.weight", "qkv_proj.weight", 6, 8)]}


def test_missing_lists_all_before_unexpected():
    params = {"a.qkv_proj.weight": 8, "norm.weight": 4}
    weight_map = {"a.q_proj.weight": "f", "extra.weight": "f"}
    with pytest.raises(sub.LoadPlanError) as info:
        sub.plan_loading(weight_map, params, PACKED)
    message = str(info.value)
    assert "a.k_proj.weight" in message and "a.v_proj.weight" in message
    assert "norm.weight" in message and "extra.weight" not in message
    assert message.index("a.k_proj.weight") < message.index("a.v_proj.weight") < message.index("norm.weight")


def test_missing_names_are_sorted_whatever_the_parameter_order():
    with pytest.raises(sub.LoadPlanError) as info:
        sub.plan_loading({}, {"z.weight": 1, "m.qkv_proj.weight": 8, "a.weight": 1}, PACKED)
    message = str(info.value)
    names = ["a.weight", "m.k_proj.weight", "m.q_proj.weight", "m.v_proj.weight", "z.weight"]
    assert [message.index(n) for n in names] == sorted(message.index(n) for n in names), message


def test_unexpected_lists_all():
    weight_map = {"norm.weight": "f", "z.bias": "f", "b.weight": "g"}
    with pytest.raises(sub.LoadPlanError) as info:
        sub.plan_loading(weight_map, {"norm.weight": 4}, PACKED, ignore_suffixes=(".inv_freq",))
    message = str(info.value)
    assert "norm.weight" not in message and message.index("b.weight") < message.index("z.bias")


def test_names_without_a_dot_and_files_only_ignored():
    weight_map = {"logit_scale": "a", "norm.weight": "a", "rotary.inv_freq": "b"}
    assert sub.plan_loading(weight_map, {"logit_scale": 1, "norm.weight": 4}, PACKED, (".inv_freq",)) == {
        "a": [("logit_scale", "logit_scale", 0, 1), ("norm.weight", "norm.weight", 0, 4)]}


def test_ignore_suffixes_are_suffixes():
    weight_map = {"norm.weight": "a", "x.inv_freq.scale": "a"}
    with pytest.raises(sub.LoadPlanError, match=r"x\.inv_freq\.scale"):
        sub.plan_loading(weight_map, {"norm.weight": 4}, PACKED, (".inv_freq",))


def test_parts_must_add_up():
    weight_map = {"a.q_proj.weight": "f", "a.k_proj.weight": "f", "a.v_proj.weight": "f"}   # nothing missing
    with pytest.raises(ValueError, match=r"a\.qkv_proj\.weight"):
        sub.plan_loading(weight_map, {"a.qkv_proj.weight": 9}, PACKED)


def test_a_needed_tensor_with_an_ignorable_suffix_is_loaded():
    weight_map = {"emb.scale": "a", "rotary.inv_freq": "b", "other.inv_freq": "b"}
    plan = sub.plan_loading(weight_map, {"emb.scale": 2, "rotary.inv_freq": 4}, PACKED, (".inv_freq",))
    assert plan == {"a": [("emb.scale", "emb.scale", 0, 2)], "b": [("rotary.inv_freq", "rotary.inv_freq", 0, 4)]}


def test_randomized_models():
    rng = random.Random(202)
    for _ in range(40):
        nh, hd, inter = rng.choice([2, 4, 8]), rng.choice([2, 4]), rng.randint(3, 9)
        nkv = rng.choice([d for d in (1, 2, 4, 8) if nh % d == 0])
        packed = {"qkv_proj": [("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)],
                  "gate_up_proj": [("gate_proj", inter), ("up_proj", inter)]}
        layers, files = rng.randint(1, 4), [f"model-{i:05d}.safetensors" for i in range(rng.randint(1, 4))]
        params, expected = {"model.norm.weight": 7}, {"model.norm.weight": ("model.norm.weight", 0, 7)}
        for layer in range(layers):
            p = f"model.layers.{layer}"
            params[f"{p}.self_attn.qkv_proj.weight"] = (nh + 2 * nkv) * hd
            params[f"{p}.mlp.gate_up_proj.weight"] = 2 * inter
            start = 0
            for part, size in packed["qkv_proj"]:
                expected[f"{p}.self_attn.{part}.weight"] = (f"{p}.self_attn.qkv_proj.weight", start, start + size)
                start += size
            expected[f"{p}.mlp.gate_proj.weight"] = (f"{p}.mlp.gate_up_proj.weight", 0, inter)
            expected[f"{p}.mlp.up_proj.weight"] = (f"{p}.mlp.gate_up_proj.weight", inter, 2 * inter)
        weight_map = {name: rng.choice(files) for name in expected}
        items = list(params.items())
        rng.shuffle(items)
        repro = {"weight_map": weight_map, "params": dict(items), "packed": packed}  # noqa: F841 - shown on failure
        plan = sub.plan_loading(weight_map, dict(items), packed)
        want = {}
        for name in sorted(expected):
            want.setdefault(weight_map[name], []).append((name, *expected[name]))
        assert plan == dict(sorted(want.items()))
        assert list(plan) == sorted(plan)
        dropped = rng.choice(sorted(expected))
        with pytest.raises(sub.LoadPlanError, match=dropped.replace(".", r"\.")):
            sub.plan_loading({k: v for k, v in weight_map.items() if k != dropped}, params, packed)
