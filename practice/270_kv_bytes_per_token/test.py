"""Tests of exercise 270: KV-cache bytes per token for MHA, GQA and MLA."""
import random

import pytest

import submission as sub

DEEPSEEK_V3 = {"num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
               "num_key_value_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
               "qk_nope_head_dim": 128, "v_head_dim": 128}
LLAMA3_70B = {"num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8}
LLAMA2_7B = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32}


def test_example_deepseek_v3():
    assert sub.attention_kind(DEEPSEEK_V3) == "MLA"
    assert sub.kv_bytes_per_token(DEEPSEEK_V3) == 70272


def test_example_llama3_70b():
    assert sub.attention_kind(LLAMA3_70B) == "GQA"
    assert sub.kv_bytes_per_token(LLAMA3_70B) == 327680


def test_example_llama2_7b_fp32():
    assert sub.attention_kind(LLAMA2_7B) == "MHA"
    assert sub.kv_bytes_per_token(LLAMA2_7B, 4) == 1048576


def test_returns_an_int():
    for config in (DEEPSEEK_V3, LLAMA3_70B, LLAMA2_7B):
        got = sub.kv_bytes_per_token(config)
        assert type(got) is int, f"config={config}: expected an int, got {got!r}"


def test_mla_is_one_latent_per_token_and_layer():
    # No factor 2 for K and V, no factor for the heads, the rotary part counted, whatever the dtype.
    config = {"num_hidden_layers": 3, "num_attention_heads": 16, "kv_lora_rank": 32, "qk_rope_head_dim": 8,
              "qk_nope_head_dim": 16, "v_head_dim": 24}
    assert sub.kv_bytes_per_token(config, 2) == 3 * 40 * 2
    assert sub.kv_bytes_per_token(config, 1) == 3 * 40
    assert sub.kv_bytes_per_token(config, 4) == 3 * 40 * 4


def test_mla_wins_over_the_kv_head_fields():
    # transformers' DeepseekV3Config also reports num_key_value_heads = 128 and head_dim = qk_rope_head_dim = 64.
    config = {**DEEPSEEK_V3, "head_dim": 64}
    assert sub.attention_kind(config) == "MLA"
    assert sub.kv_bytes_per_token(config) == 70272


def test_mla_needs_no_head_fields():
    config = {"num_hidden_layers": 2, "kv_lora_rank": 16, "qk_rope_head_dim": 4}
    assert sub.attention_kind(config) == "MLA"
    assert sub.kv_bytes_per_token(config) == 2 * 20 * 2


def test_kv_lora_rank_none_is_not_mla():
    config = {**LLAMA2_7B, "kv_lora_rank": None}
    assert sub.attention_kind(config) == "MHA"
    assert sub.kv_bytes_per_token(config) == 524288


def test_num_key_value_heads_none_or_equal_is_mha():
    assert sub.attention_kind({**LLAMA2_7B, "num_key_value_heads": None}) == "MHA"
    assert sub.kv_bytes_per_token({**LLAMA2_7B, "num_key_value_heads": None}) == 524288
    assert sub.attention_kind({**LLAMA2_7B, "num_key_value_heads": 32}) == "MHA"


def test_one_kv_head_is_gqa():
    config = {**LLAMA2_7B, "num_key_value_heads": 1}
    assert sub.attention_kind(config) == "GQA"
    assert sub.kv_bytes_per_token(config) == 2 * 32 * 1 * 128 * 2


def test_head_dim_wins_over_hidden_size():
    # hidden_size / heads = 80, but the heads are 128 wide (as in some Qwen3 configs)
    config = {"num_hidden_layers": 64, "hidden_size": 5120, "num_attention_heads": 64, "num_key_value_heads": 8,
              "head_dim": 128}
    assert sub.kv_bytes_per_token(config) == 2 * 64 * 8 * 128 * 2
    assert sub.kv_bytes_per_token({**config, "head_dim": None}) == 2 * 64 * 8 * 80 * 2


def test_head_dim_without_hidden_size():
    config = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8}
    assert sub.kv_bytes_per_token(config, 1) == 2 * 2 * 2 * 8


@pytest.mark.parametrize("seed", range(12))
def test_random_configs(seed):
    rng = random.Random(seed)
    layers, b = rng.randint(1, 96), rng.choice([1, 2, 4])
    kind = ("MLA", "GQA", "MHA")[seed % 3]
    if kind == "MLA":
        rank, rope = rng.choice([64, 128, 256, 512]), rng.choice([16, 32, 64])
        config = {"num_hidden_layers": layers, "num_attention_heads": rng.choice([16, 64, 128]),
                  "num_key_value_heads": rng.choice([16, 64, 128]), "kv_lora_rank": rank, "qk_rope_head_dim": rope}
        want = layers * (rank + rope) * b
    else:
        heads = rng.choice([8, 16, 32, 64])
        kv = heads if kind == "MHA" else rng.choice([d for d in (1, 2, 4, 8) if d < heads])
        head_dim = rng.choice([64, 80, 96, 128])
        config = {"num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
                  "hidden_size": heads * head_dim}
        if seed % 2:
            config["head_dim"], config["hidden_size"] = head_dim, rng.choice([1000, 4096, 5120])
        want = 2 * layers * kv * head_dim * b
    repro = {"config": config, "dtype_bytes": b}  # noqa: F841
    assert sub.attention_kind(config) == kind
    assert sub.kv_bytes_per_token(config, b) == want


@pytest.mark.parametrize("config, field", [
    ({k: v for k, v in DEEPSEEK_V3.items() if k != "num_hidden_layers"}, "num_hidden_layers"),
    ({**LLAMA3_70B, "num_hidden_layers": 0}, "num_hidden_layers"),
    ({**LLAMA3_70B, "num_hidden_layers": 80.0}, "num_hidden_layers"),
    ({**LLAMA3_70B, "num_hidden_layers": True}, "num_hidden_layers"),
    ({k: v for k, v in DEEPSEEK_V3.items() if k != "qk_rope_head_dim"}, "qk_rope_head_dim"),
    ({**DEEPSEEK_V3, "qk_rope_head_dim": None}, "qk_rope_head_dim"),
    ({**DEEPSEEK_V3, "kv_lora_rank": -512}, "kv_lora_rank"),
    ({**DEEPSEEK_V3, "kv_lora_rank": "512"}, "kv_lora_rank"),
    ({k: v for k, v in LLAMA3_70B.items() if k != "num_attention_heads"}, "num_attention_heads"),
    ({**LLAMA3_70B, "num_key_value_heads": 0}, "num_key_value_heads"),
    ({**LLAMA3_70B, "num_key_value_heads": 3}, "num_key_value_heads"),        # does not divide 64
    ({**LLAMA3_70B, "num_key_value_heads": 128}, "num_key_value_heads"),      # more KV heads than heads
    ({**LLAMA3_70B, "head_dim": 0}, "head_dim"),
    ({**LLAMA3_70B, "hidden_size": 8200}, "hidden_size"),                    # not divisible by 64 heads
    ({k: v for k, v in LLAMA3_70B.items() if k != "hidden_size"}, "hidden_size"),
])
def test_bad_config_names_the_field(config, field):
    repro = {"config": config}  # noqa: F841
    with pytest.raises(ValueError, match=field):
        sub.kv_bytes_per_token(config)


@pytest.mark.parametrize("dtype_bytes", [0, -2, 2.0, True, "2"])
def test_bad_dtype_bytes_names_the_field(dtype_bytes):
    for config in (DEEPSEEK_V3, LLAMA3_70B):
        with pytest.raises(ValueError, match="dtype_bytes"):
            sub.kv_bytes_per_token(config, dtype_bytes)


@pytest.mark.parametrize("config, field", [
    ({k: v for k, v in LLAMA3_70B.items() if k != "num_attention_heads"}, "num_attention_heads"),
    ({**LLAMA3_70B, "num_attention_heads": False}, "num_attention_heads"),
    ({**LLAMA3_70B, "num_key_value_heads": 3}, "num_key_value_heads"),
    ({**LLAMA3_70B, "num_key_value_heads": 8.0}, "num_key_value_heads"),
])
def test_attention_kind_checks_its_fields(config, field):
    repro = {"config": config}  # noqa: F841
    with pytest.raises(ValueError, match=field):
        sub.attention_kind(config)
