"""Tests of exercise 200: the attention geometry of a config.json."""
import random

import pytest

import submission as sub


def geometry(cfg):
    return sub.attention_geometry(cfg)


def test_example_llama32():
    cfg = {"hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_hidden_layers": 16, "torch_dtype": "bfloat16",
           "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 32.0}}
    assert geometry(cfg) == {"num_heads": 32, "num_kv_heads": 8, "head_dim": 64, "group_size": 4, "kind": "GQA",
                             "q_size": 2048, "kv_size": 512, "qkv_rows": 3072, "kv_bytes_per_token": 32768,
                             "rope_theta": 500000.0, "rope_type": "llama3"}


def test_example_indivisible_hidden_size():
    with pytest.raises(ValueError, match="hidden_size"):
        geometry({"hidden_size": 64, "num_attention_heads": 6, "num_hidden_layers": 2})


def test_defaults():
    g = geometry({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3})
    assert (g["num_kv_heads"], g["head_dim"], g["group_size"], g["kind"]) == (4, 16, 1, "MHA")
    assert g["kv_bytes_per_token"] == 2 * 3 * 64 * 4          # float32 when no dtype is given
    assert (g["rope_theta"], g["rope_type"]) == (10000.0, "default")
    g = geometry({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
                  "num_key_value_heads": None, "head_dim": None, "rope_scaling": None})
    assert (g["num_kv_heads"], g["head_dim"], g["rope_type"]) == (4, 16, "default")


def test_explicit_head_dim_wins():
    # Qwen3-style: heads * head_dim != hidden_size is allowed when head_dim is explicit.
    g = geometry({"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
                  "num_hidden_layers": 28, "dtype": "bfloat16"})
    assert (g["q_size"], g["kv_size"], g["qkv_rows"]) == (2048, 1024, 4096)
    assert g["kv_bytes_per_token"] == 2 * 28 * 1024 * 2


def test_mqa_and_single_head():
    assert geometry({"hidden_size": 48, "num_attention_heads": 6, "num_key_value_heads": 1,
                     "num_hidden_layers": 1})["kind"] == "MQA"
    assert geometry({"hidden_size": 48, "num_attention_heads": 1, "num_hidden_layers": 1})["kind"] == "MHA"


def test_rope_spellings():
    base = {"hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1}
    new = geometry({**base, "rope_parameters": {"rope_type": "linear", "rope_theta": 5000.0, "factor": 2.0},
                    "rope_theta": 1.0})
    assert (new["rope_theta"], new["rope_type"]) == (5000.0, "linear")
    old = geometry({**base, "rope_theta": 300, "rope_scaling": {"type": "dynamic", "factor": 2.0}})
    assert (old["rope_theta"], old["rope_type"]) == (300.0, "dynamic")
    assert isinstance(old["rope_theta"], float)
    plain = geometry({**base, "rope_parameters": {"rope_theta": 7.0}})
    assert (plain["rope_theta"], plain["rope_type"]) == (7.0, "default")
    both = geometry({**base, "rope_theta": 50.0, "rope_parameters": {"rope_type": "default", "rope_theta": 9.0},
                     "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    assert (both["rope_theta"], both["rope_type"]) == (50.0, "linear")     # rope_scaling wins, as in transformers 5


def test_dtype_wins_over_torch_dtype():
    base = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
    assert geometry({**base, "dtype": "float32", "torch_dtype": "bfloat16"})["kv_bytes_per_token"] == 2 * 2 * 64 * 4
    assert geometry({**base, "dtype": "bfloat16", "torch_dtype": "float32"})["kv_bytes_per_token"] == 2 * 2 * 64 * 2


def test_empty_rope_scaling_counts_as_absent():
    base = {"hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1}
    g = geometry({**base, "rope_scaling": {}, "rope_parameters": {"rope_type": "linear", "rope_theta": 9.0}})
    assert (g["rope_theta"], g["rope_type"]) == (9.0, "linear")
    g = geometry({**base, "rope_scaling": {}, "rope_theta": 123})
    assert (g["rope_theta"], g["rope_type"]) == (123.0, "default")


def test_top_level_rope_theta_is_used_when_the_dict_has_none():
    base = {"hidden_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1}
    g = geometry({**base, "rope_theta": 42, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})
    assert (g["rope_theta"], g["rope_type"]) == (42.0, "dynamic")


@pytest.mark.parametrize("changes, field", [
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"num_key_value_heads": 0}, "num_key_value_heads"),
    ({"num_attention_heads": -4}, "num_attention_heads"),
    ({"num_attention_heads": 4.0}, "num_attention_heads"),
    ({"head_dim": 0}, "head_dim"),
    ({"head_dim": -16}, "head_dim"),                  # an explicit head_dim is checked too
    ({"num_key_value_heads": -2}, "num_key_value_heads"),
    ({"dtype": "float64"}, "float64"),                # only float32, bfloat16, float16
    ({"num_hidden_layers": True}, "num_hidden_layers"),
    ({"dtype": "float8"}, "float8"),
])
def test_errors_name_the_field(changes, field):
    cfg = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, **changes}
    with pytest.raises(ValueError, match=field):
        geometry(cfg)


@pytest.mark.parametrize("missing", ["hidden_size", "num_attention_heads", "num_hidden_layers"])
def test_missing_required_field(missing):
    cfg = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
    del cfg[missing]
    with pytest.raises(ValueError, match=missing):
        geometry(cfg)


def test_randomized_geometries():
    rng = random.Random(200)
    for _ in range(200):
        kv_heads = rng.choice([1, 2, 3, 4, 8])
        group = rng.choice([1, 2, 3, 4, 7])
        heads, head_dim = kv_heads * group, rng.choice([8, 16, 64, 80, 128])
        layers, dtype = rng.randint(1, 40), rng.choice(["float32", "bfloat16", "float16"])
        cfg = {"num_attention_heads": heads, "num_hidden_layers": layers}
        if rng.random() < 0.5:
            cfg["hidden_size"] = heads * head_dim              # head_dim derived
        else:
            cfg["hidden_size"], cfg["head_dim"] = rng.choice([256, 512, 1000]), head_dim
        if kv_heads != heads or rng.random() < 0.5:
            cfg["num_key_value_heads"] = kv_heads
        cfg[rng.choice(["dtype", "torch_dtype"])] = dtype
        repro = {"cfg": cfg}  # noqa: F841 - shown on failure: geometry(cfg)
        g = geometry(cfg)
        size = {"float32": 4, "bfloat16": 2, "float16": 2}[dtype]
        assert g["head_dim"] == head_dim and g["group_size"] == group, cfg
        assert g["kind"] == ("MHA" if group == 1 else "MQA" if kv_heads == 1 else "GQA"), cfg
        assert g["qkv_rows"] == (heads + 2 * kv_heads) * head_dim, cfg
        assert g["kv_bytes_per_token"] == 2 * layers * kv_heads * head_dim * size, cfg


# ---------------------------------------------------------------- part two: rope_settings

def test_example_rope_settings():
    assert sub.rope_settings({"rope_theta": 500000.0}) == (500000.0, None)
    theta, scaling = sub.rope_settings({"max_position_embeddings": 131072, "rope_parameters": {
        "rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})
    assert theta == 500000.0 and scaling == {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    with pytest.raises(sub.UnsupportedModelError, match="longrope"):
        sub.rope_settings({"rope_scaling": {"rope_type": "longrope", "factor": 4.0}})


def test_rope_settings_plain_rope_is_none_with_either_spelling():
    for cfg in ({}, {"rope_scaling": None}, {"rope_scaling": {}}, {"rope_parameters": {"rope_type": "default"}},
                {"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}, "rope_theta": 5.0},
                {"rope_scaling": {"type": "default"}, "rope_theta": 42}):
        theta, scaling = sub.rope_settings(cfg)
        assert scaling is None and isinstance(theta, float), cfg
    assert sub.rope_settings({})[0] == 10000.0
    assert sub.rope_settings({"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}, "rope_theta": 5.0})[0] == 1e6
    assert sub.rope_settings({"rope_scaling": {"type": "default"}, "rope_theta": 42}) == (42.0, None)


def test_rope_settings_legacy_scaling_wins_and_type_is_read_and_dropped():
    cfg = {"rope_theta": 7.0, "rope_scaling": {"type": "linear", "factor": 2.0},
           "rope_parameters": {"rope_type": "default", "rope_theta": 9.0}}
    before = {k: (dict(v) if isinstance(v, dict) else v) for k, v in cfg.items()}
    assert sub.rope_settings(cfg) == (7.0, {"rope_type": "linear", "factor": 2.0})
    assert cfg == before, "rope_settings must not change the config it reads"
    both = {"rope_scaling": {"rope_type": "dynamic", "type": "dynamic", "factor": 3.0, "rope_theta": 11}}
    assert sub.rope_settings(both) == (11.0, {"rope_type": "dynamic", "factor": 3.0})


def test_rope_settings_fills_original_max_and_yarn_factor():
    theta, scaling = sub.rope_settings({"max_position_embeddings": 4096,
                                        "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 1024}})
    assert scaling == {"rope_type": "yarn", "original_max_position_embeddings": 1024, "factor": 4.0}
    _, scaling = sub.rope_settings({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "yarn", "factor": 8.0}})
    assert scaling == {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}
    _, scaling = sub.rope_settings({"rope_scaling": {"rope_type": "yarn", "factor": 8.0}})
    assert scaling["original_max_position_embeddings"] == 2048
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    _, scaling = sub.rope_settings({"max_position_embeddings": 1000, "original_max_position_embeddings": 300,
                                    "rope_scaling": dict(llama3, original_max_position_embeddings=200)})
    assert scaling["original_max_position_embeddings"] == 300        # the top-level value first
    _, scaling = sub.rope_settings({"rope_scaling": {"rope_type": "linear", "factor": 2.0}, "max_position_embeddings": 9})
    assert "original_max_position_embeddings" not in scaling          # only llama3 and yarn get it


@pytest.mark.parametrize("cfg, error, words", [
    ({"rope_theta": 0}, ValueError, ["rope_theta"]),
    ({"rope_theta": -1.0}, ValueError, ["rope_theta"]),
    ({"rope_theta": float("inf")}, ValueError, ["rope_theta"]),
    ({"rope_theta": float("nan")}, ValueError, ["rope_theta"]),
    ({"rope_theta": True}, ValueError, ["rope_theta"]),
    ({"rope_theta": "1e4"}, ValueError, ["rope_theta"]),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 0.0}, "rope_theta": 10.0}, ValueError, ["rope_theta"]),
    ({"rope_scaling": {"rope_type": "longrope"}}, sub.UnsupportedModelError, ["longrope"]),
    ({"partial_rotary_factor": 0.5}, sub.UnsupportedModelError, ["partial_rotary_factor"]),
    ({"rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}}, sub.UnsupportedModelError,
     ["partial_rotary_factor"]),
    ({"rope_scaling": {"rope_type": "linear"}}, ValueError, ["linear", "factor"]),
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": None}}, ValueError,
     ["llama3", "low_freq_factor", "high_freq_factor"]),
])
def test_rope_settings_errors(cfg, error, words):
    with pytest.raises(error) as info:
        sub.rope_settings(cfg)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert issubclass(sub.UnsupportedModelError, ValueError)


def test_rope_settings_partial_rotary_factor_one_is_fine():
    assert sub.rope_settings({"partial_rotary_factor": 1.0}) == (10000.0, None)
