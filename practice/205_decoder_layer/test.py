"""Tests of exercise 205: a decoder layer, checked against mini_platform's DecoderLayer."""
import pytest
import torch

import submission as sub
from mini_platform.model.layers import DecoderLayer

ENGINE_FORWARD = DecoderLayer.forward   # taken before anything could swap it


def random_layer(seed, hidden, inter, nh, nkv, hd, bias):
    gen = torch.Generator().manual_seed(seed)
    shapes = {"input_layernorm.weight": (hidden,), "post_attention_layernorm.weight": (hidden,),
              "self_attn.q_proj.weight": (nh * hd, hidden), "self_attn.k_proj.weight": (nkv * hd, hidden),
              "self_attn.v_proj.weight": (nkv * hd, hidden), "self_attn.o_proj.weight": (hidden, nh * hd),
              "mlp.gate_proj.weight": (inter, hidden), "mlp.up_proj.weight": (inter, hidden),
              "mlp.down_proj.weight": (hidden, inter)}
    if bias:
        shapes.update({"self_attn.q_proj.bias": (nh * hd,), "self_attn.k_proj.bias": (nkv * hd,),
                       "self_attn.v_proj.bias": (nkv * hd,)})
    weights = {n: (1 + 0.1 * torch.randn(s, generator=gen)) if "norm" in n else 0.3 * torch.randn(s, generator=gen)
               for n, s in shapes.items()}
    return weights


def built_layer(hidden_size, weights, config, arch, mlp_name="mlp"):
    """mini_platform's DecoderLayer holding ``weights`` (the MLP under ``mlp_name``)."""
    from mini_platform.model.config import ModelConfig
    from mini_platform.model.layers import DecoderLayer, RotaryEmbedding, SiluAndMulMLP

    mc = ModelConfig.from_dict({"architectures": [arch], "vocab_size": 8, "hidden_size": hidden_size,
                                "intermediate_size": weights["mlp.up_proj.weight"].shape[0], "num_hidden_layers": 1,
                                "max_position_embeddings": 256, **config})
    rotary = RotaryEmbedding(mc.head_dim, 256, mc.rope_theta, None)
    layer = DecoderLayer(mc, 0, rotary, torch.float32, SiluAndMulMLP(mc, torch.float32), mlp_name)
    attn, mlp = "self_attn.{}_proj.", "mlp.{}_proj.weight"
    dense = getattr(layer, mlp_name)
    with torch.no_grad():
        layer.input_layernorm.weight.copy_(weights["input_layernorm.weight"])
        layer.post_attention_layernorm.weight.copy_(weights["post_attention_layernorm.weight"])
        layer.self_attn.qkv_proj.weight.copy_(torch.cat([weights[attn.format(p) + "weight"] for p in "qkv"]))
        if layer.self_attn.qkv_proj.bias is not None:
            layer.self_attn.qkv_proj.bias.copy_(torch.cat([weights[attn.format(p) + "bias"] for p in "qkv"]))
        layer.self_attn.o_proj.weight.copy_(weights[attn.format("o") + "weight"])
        dense.gate_up_proj.weight.copy_(torch.cat([weights[mlp.format("gate")], weights[mlp.format("up")]]))
        dense.down_proj.weight.copy_(weights[mlp.format("down")])
    return layer


def cache_for(layer, tokens):
    from mini_platform.model.contiguous_attention import ContiguousAttention
    return ContiguousAttention(1, tokens, layer.self_attn.num_kv_heads, layer.self_attn.head_dim)


def run_layer(forward, layer, positions, hidden, residual):
    """``forward`` (the engine's or the submission's) on the CPU kernels with a fresh contiguous cache."""
    from mini_platform import ops
    with torch.no_grad(), ops.use_backend("cpu"):
        return forward(layer, positions, hidden, residual, cache_for(layer, hidden.shape[0]))


def engine_layer(hidden, positions, weights, config, arch):
    """The engine's answer: mini_platform's DecoderLayer with the CPU kernels and the contiguous cache."""
    layer = built_layer(hidden.shape[1], weights, config, arch)
    out, residual = run_layer(ENGINE_FORWARD, layer, positions, hidden, None)
    return out + residual


def test_example():
    config = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
              "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    H, I = 32, 64
    shapes = {"input_layernorm.weight": (H,), "post_attention_layernorm.weight": (H,),
              "self_attn.q_proj.weight": (32, H), "self_attn.k_proj.weight": (16, H),
              "self_attn.v_proj.weight": (16, H), "self_attn.o_proj.weight": (H, 32),
              "mlp.gate_proj.weight": (I, H), "mlp.up_proj.weight": (I, H), "mlp.down_proj.weight": (H, I)}
    weights = {name: torch.zeros(shape) for name, shape in shapes.items()}
    x = torch.randn(5, H, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(sub.decoder_layer(x, torch.arange(5), weights, config), x)


@pytest.mark.parametrize("arch, nh, nkv, hd, hidden", [
    ("LlamaForCausalLM", 4, 4, 8, 32),      # MHA
    ("LlamaForCausalLM", 8, 2, 16, 64),     # GQA, heads * head_dim != hidden
    ("Qwen2ForCausalLM", 6, 2, 8, 48),      # GQA with q/k/v bias
    ("Qwen2ForCausalLM", 4, 1, 16, 32),     # MQA with bias
])
def test_matches_the_engine(arch, nh, nkv, hd, hidden):
    config = {"num_attention_heads": nh, "num_key_value_heads": nkv, "head_dim": hd,
              "rms_norm_eps": 1e-5, "rope_theta": 500.0}
    bias = arch == "Qwen2ForCausalLM"
    weights = random_layer(nh * 10 + nkv, hidden, 80, nh, nkv, hd, bias)
    gen = torch.Generator().manual_seed(hd)
    x = torch.randn(7, hidden, generator=gen)
    x[1] *= 1e-3                                          # a tiny row: here eps matters inside the square root
    positions = torch.tensor([3, 4, 5, 6, 7, 8, 9])       # a prompt that does not start at position 0
    expected = engine_layer(x, positions, weights, config, arch)
    torch.testing.assert_close(sub.decoder_layer(x, positions, weights, config), expected, atol=1e-4, rtol=1e-4)


def test_causal():
    config = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "rms_norm_eps": 1e-6,
              "rope_theta": 10000.0}
    weights = random_layer(1, 32, 48, 4, 2, 8, False)
    x = torch.randn(6, 32, generator=torch.Generator().manual_seed(2))
    full = sub.decoder_layer(x, torch.arange(6), weights, config)
    changed = x.clone()
    changed[4:] += 1.0                                     # later tokens must not change earlier outputs
    torch.testing.assert_close(sub.decoder_layer(changed, torch.arange(6), weights, config)[:4], full[:4])
    # RoPE encodes relative position: shifting every position by 5 changes nothing, spreading them does
    torch.testing.assert_close(sub.decoder_layer(x, torch.arange(6) + 5, weights, config), full, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(sub.decoder_layer(x, torch.arange(6) * 3, weights, config), full, atol=1e-3)


def test_causality_follows_row_order_not_positions():
    """positions only rotate q and k: row i sees rows 0..i even when the positions are not increasing."""
    config = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "rms_norm_eps": 1e-5,
              "rope_theta": 500.0}
    weights = random_layer(3, 32, 48, 4, 2, 8, False)
    x = torch.randn(5, 32, generator=torch.Generator().manual_seed(4))
    positions = torch.tensor([6, 2, 9, 0, 4])
    expected = engine_layer(x, positions, weights, config, "LlamaForCausalLM")
    torch.testing.assert_close(sub.decoder_layer(x, positions, weights, config), expected, atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------- forward: the engine's DecoderLayer.forward

CONFIG = {"num_attention_heads": 6, "num_key_value_heads": 2, "head_dim": 8, "rms_norm_eps": 1e-5, "rope_theta": 500.0}


def layer_and_input(seed, arch="Qwen2ForCausalLM", mlp_name="mlp"):
    weights = random_layer(seed, 48, 80, 6, 2, 8, arch == "Qwen2ForCausalLM")
    x = torch.randn(5, 48, generator=torch.Generator().manual_seed(seed))
    return built_layer(48, weights, CONFIG, arch, mlp_name), weights, x


def test_example_forward_first_layer_returns_the_mlp_output_and_the_residual_stream():
    layer, weights, x = layer_and_input(1)
    positions = torch.arange(2, 7)
    out, residual = run_layer(sub.forward, layer, positions, x, None)
    assert out.shape == residual.shape == x.shape
    expected = sub_free_decoder_layer(x, positions, weights)
    torch.testing.assert_close(out + residual, expected, atol=1e-4, rtol=1e-4)
    want_out, want_residual = run_layer(ENGINE_FORWARD, layer, positions, x, None)
    torch.testing.assert_close(out, want_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(residual, want_residual, atol=1e-5, rtol=1e-5)


def sub_free_decoder_layer(x, positions, weights):
    """The statement's formula through the engine's DecoderLayer (independent of the submission)."""
    return engine_layer(x, positions, weights, CONFIG, "Qwen2ForCausalLM")


@pytest.mark.parametrize("arch", ["LlamaForCausalLM", "Qwen2ForCausalLM"])
def test_forward_with_the_previous_layers_residual(arch):
    layer, _, x = layer_and_input(2, arch)
    residual = torch.randn(5, 48, generator=torch.Generator().manual_seed(22))
    positions = torch.tensor([0, 1, 2, 9, 10])
    got = run_layer(sub.forward, layer, positions, x, residual)
    want = run_layer(ENGINE_FORWARD, layer, positions, x, residual)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


def test_two_layers_chained_through_the_residual_equal_the_formula_twice():
    first, w1, x = layer_and_input(3)
    second, w2, _ = layer_and_input(4)
    positions = torch.arange(5)
    hidden, residual = run_layer(sub.forward, first, positions, x, None)
    hidden, residual = run_layer(sub.forward, second, positions, hidden, residual)
    once = engine_layer(x, positions, w1, CONFIG, "Qwen2ForCausalLM")
    twice = engine_layer(once, positions, w2, CONFIG, "Qwen2ForCausalLM")
    torch.testing.assert_close(hidden + residual, twice, atol=1e-4, rtol=1e-4)


def test_forward_finds_the_mlp_under_its_checkpoint_name():
    layer, _, x = layer_and_input(5, mlp_name="block_sparse_moe")   # Mixtral's name for its expert block
    assert not hasattr(layer, "mlp")
    positions = torch.arange(5)
    got = run_layer(sub.forward, layer, positions, x, None)
    want = run_layer(ENGINE_FORWARD, layer, positions, x, None)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
