"""Tests of exercise 238: moe_layout and expert_checkpoint_plan."""
import random

import pytest

import submission as sub

QWEN = {"architectures": ["Qwen2MoeForCausalLM"], "num_hidden_layers": 4, "hidden_size": 8, "num_experts": 4,
        "num_experts_per_tok": 2, "moe_intermediate_size": 3, "mlp_only_layers": [3], "decoder_sparse_step": 2}
MIXTRAL = {"architectures": ["MixtralForCausalLM"], "num_hidden_layers": 3, "hidden_size": 16, "intermediate_size": 5,
           "num_local_experts": 4, "num_experts_per_tok": 2}


def test_example_layout():
    assert sub.moe_layout(QWEN) == {"num_experts": 4, "top_k": 2, "expert_intermediate_size": 3, "renormalize": False,
                                    "shared_expert_intermediate_size": 5632, "sparse_layers": [1]}


def test_example_plan():
    assert sub.expert_checkpoint_plan(QWEN, 1, owned_experts=[2]) == {
        "model.layers.1.mlp.experts.2.gate_proj.weight": ("w13", 0, 0, 3),
        "model.layers.1.mlp.experts.2.up_proj.weight": ("w13", 0, 3, 6),
        "model.layers.1.mlp.experts.2.down_proj.weight": ("w2", 0, 0, 8)}


def test_mixtral_layout_and_names():
    assert sub.moe_layout(MIXTRAL) == {"num_experts": 4, "top_k": 2, "expert_intermediate_size": 5, "renormalize": True,
                                       "shared_expert_intermediate_size": 0, "sparse_layers": [0, 1, 2]}
    plan = sub.expert_checkpoint_plan(MIXTRAL, 2, owned_experts=[3, 1])
    assert plan == {"model.layers.2.block_sparse_moe.experts.3.w1.weight": ("w13", 0, 0, 5),
                    "model.layers.2.block_sparse_moe.experts.3.w3.weight": ("w13", 0, 5, 10),
                    "model.layers.2.block_sparse_moe.experts.3.w2.weight": ("w2", 0, 0, 16),
                    "model.layers.2.block_sparse_moe.experts.1.w1.weight": ("w13", 1, 0, 5),
                    "model.layers.2.block_sparse_moe.experts.1.w3.weight": ("w13", 1, 5, 10),
                    "model.layers.2.block_sparse_moe.experts.1.w2.weight": ("w2", 1, 0, 16)}


def test_defaults():
    mixtral = {"architectures": ["MixtralForCausalLM"], "num_hidden_layers": 1, "hidden_size": 4, "intermediate_size": 7}
    layout = sub.moe_layout(mixtral)
    assert (layout["num_experts"], layout["top_k"]) == (8, 2)
    qwen = {"architectures": ["Qwen2MoeForCausalLM"], "num_hidden_layers": 2, "hidden_size": 4, "mlp_only_layers": None}
    assert sub.moe_layout(qwen) == {"num_experts": 60, "top_k": 4, "expert_intermediate_size": 1408, "renormalize": False,
                                    "shared_expert_intermediate_size": 5632, "sparse_layers": [0, 1]}
    assert len(sub.expert_checkpoint_plan(mixtral, 0)) == 3 * 8


def test_mixtral_ignores_qwen_layer_fields():
    # Mixtral has every layer sparse; Qwen2-MoE's layer fields in its config change nothing
    config = {**MIXTRAL, "mlp_only_layers": [1], "decoder_sparse_step": 2}
    assert sub.moe_layout(config)["sparse_layers"] == [0, 1, 2]
    assert len(sub.expert_checkpoint_plan(config, 0, owned_experts=[0])) == 3


def test_top_k_may_equal_num_experts():
    assert sub.moe_layout({**QWEN, "num_experts_per_tok": 4})["top_k"] == 4
    assert sub.moe_layout({**MIXTRAL, "num_experts_per_tok": 4})["top_k"] == 4


def test_no_owned_expert_gives_an_empty_plan():
    assert sub.expert_checkpoint_plan(QWEN, 1, owned_experts=[]) == {}, "[] owns nothing; only None means all experts"


def test_qwen_norm_topk_prob_and_no_experts():
    assert sub.moe_layout({**QWEN, "norm_topk_prob": True, "decoder_sparse_step": 1})["renormalize"] is True
    assert sub.moe_layout({**QWEN, "num_experts": 0, "num_experts_per_tok": 0})["sparse_layers"] == []


@pytest.mark.parametrize("call", [
    lambda: sub.moe_layout({**QWEN, "architectures": ["DeepseekV3ForCausalLM"]}),
    lambda: sub.moe_layout({**QWEN, "num_experts_per_tok": 5}),
    lambda: sub.moe_layout({**MIXTRAL, "num_experts_per_tok": 5}),
    lambda: sub.moe_layout({**QWEN, "decoder_sparse_step": 0}),
    lambda: sub.moe_layout({**QWEN, "decoder_sparse_step": -2}),
    lambda: sub.moe_layout({**QWEN, "num_experts": 0}),                # top_k 2 > 0 experts
    lambda: sub.expert_checkpoint_plan(QWEN, 5),                      # (5 + 1) % 2 == 0, but there are 4 layers
    lambda: sub.expert_checkpoint_plan(QWEN, -1),
    lambda: sub.expert_checkpoint_plan(MIXTRAL, 3),
    lambda: sub.expert_checkpoint_plan(QWEN, 3),
    lambda: sub.expert_checkpoint_plan(QWEN, 0),
    lambda: sub.expert_checkpoint_plan(QWEN, 1, owned_experts=[4]),
    lambda: sub.expert_checkpoint_plan(QWEN, 1, owned_experts=[-1]),
    lambda: sub.expert_checkpoint_plan(QWEN, 1, owned_experts=[1, 1]),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("seed", range(8))
def test_random_qwen_configs(seed):
    rng = random.Random(seed)
    layers, step = rng.randint(1, 12), rng.randint(1, 4)
    dense = rng.sample(range(layers), rng.randint(0, layers // 2))          # in no particular order
    num_experts = rng.randint(2, 16)
    inter, hidden = rng.randint(1, 64), rng.randint(1, 64)
    config = {"architectures": ["Qwen2MoeForCausalLM"], "num_hidden_layers": layers, "hidden_size": hidden,
              "num_experts": num_experts, "num_experts_per_tok": rng.randint(1, num_experts),
              "moe_intermediate_size": inter, "decoder_sparse_step": step, "mlp_only_layers": dense,
              "shared_expert_intermediate_size": rng.choice([0, 40])}
    expected = [i for i in range(layers) if i not in dense and (i + 1) % step == 0]
    layout = sub.moe_layout(config)
    assert layout["sparse_layers"] == expected, f"seed={seed}, config={config}"
    assert layout["shared_expert_intermediate_size"] == config["shared_expert_intermediate_size"]
    for layer in expected:
        owned = rng.sample(range(num_experts), rng.randint(1, num_experts))
        plan = sub.expert_checkpoint_plan(config, layer, owned)
        assert len(plan) == 3 * len(owned)
        for local, e in enumerate(owned):
            prefix = f"model.layers.{layer}.mlp.experts.{e}"
            assert plan[f"{prefix}.gate_proj.weight"] == ("w13", local, 0, inter)
            assert plan[f"{prefix}.up_proj.weight"] == ("w13", local, inter, 2 * inter)
            assert plan[f"{prefix}.down_proj.weight"] == ("w2", local, 0, hidden)
