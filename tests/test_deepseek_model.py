"""DeepSeek-V2/V3, Qwen3 and Qwen3-MoE against Hugging Face transformers: tiny random checkpoints built and saved with
transformers 5.24's own classes, greedy tokens equal token for token (fp32) through ``greedy_generate`` and the
engine (``LLM``: prefix caching, chunked prefill, preemption, decode graphs, tensor and expert parallelism), on the
CPU kernels. The Triton kernels run in the Triton interpreter on the CPU; the npu kernels are verified against an
emulation of torch_npu semantics, not run on Ascend hardware here. Plus the latent attention's two forms, the
refusals, and the loader's handling of DeepSeek-V3's extra prediction layer."""
from __future__ import annotations

import json
import random

import pytest
import torch
from safetensors.torch import load_file, save_file

from mini_platform import LLM, SamplingParams, ops
from mini_platform.generate import main as generate_main
from mini_platform.model import ModelConfig, UnsupportedModelError, greedy_generate, load_model
from mini_platform.model.contiguous_attention import causal_attention
from mini_platform.model.mla import expand_latents, mla_softmax_scale, split_kv_b_proj
from test_model import greedy_memo, hf_greedy, hf_random_model
from test_moe_model import GREEDY, assert_engine_matches

pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # transformers, no shared expert
VOCAB = 97
COMMON = dict(vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, max_position_embeddings=128,
              bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
MLA = dict(num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=6,
           intermediate_size=48, moe_intermediate_size=16)
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "mscale": 1.0,
        "mscale_all_dim": 0.8, "rope_theta": 10000.0}
# name -> (transformers class prefix, config fields)
CONFIGS = {
    # DeepSeek-V3 proper: query bottleneck, 12 experts in 4 groups (2 chosen), sigmoid + correction bias, YaRN.
    # (Ascend's npu_moe_gating_top_k needs more than 2 experts per group.)
    "dsv3-groups-yarn": ("DeepseekV3", dict(**MLA, num_hidden_layers=3, q_lora_rank=12, n_routed_experts=12,
                                            num_experts_per_tok=3, n_group=4, topk_group=2, n_shared_experts=1,
                                            first_k_dense_replace=1, routed_scaling_factor=2.5,
                                            rope_parameters=YARN)),
    # The V2-Lite form in V3's class: no query bottleneck, one group, neox-style rotary, no renormalisation; no
    # shared expert (transformers saves a zero-size one) and values wider than the query/key heads (20 > 8 + 8).
    "dsv3-lite-neox": ("DeepseekV3", dict(**{**MLA, "v_head_dim": 20}, num_hidden_layers=2, q_lora_rank=None,
                                          n_routed_experts=6, num_experts_per_tok=2, n_group=1, topk_group=1,
                                          n_shared_experts=0, first_k_dense_replace=0, norm_topk_prob=False,
                                          rope_interleave=False)),
    "dsv2-lite": ("DeepseekV2", dict(**MLA, num_hidden_layers=2, q_lora_rank=None, n_routed_experts=6,
                                     num_experts_per_tok=2, n_shared_experts=2, first_k_dense_replace=1,
                                     topk_method="greedy")),
    "dsv2-group-limited": ("DeepseekV2", dict(**MLA, num_hidden_layers=2, q_lora_rank=12, n_routed_experts=12,
                                              num_experts_per_tok=2, n_group=4, topk_group=2, n_shared_experts=1,
                                              first_k_dense_replace=0, topk_method="group_limited_greedy",
                                              routed_scaling_factor=1.5)),
    "qwen3": ("Qwen3", dict(num_key_value_heads=2, head_dim=12, intermediate_size=48, num_hidden_layers=2)),
    "qwen3-moe": ("Qwen3Moe", dict(num_key_value_heads=2, head_dim=8, intermediate_size=48, num_hidden_layers=3,
                                   num_experts=6, num_experts_per_tok=2, moe_intermediate_size=16,
                                   norm_topk_prob=True, mlp_only_layers=[1])),
}


def hf_model(prefix: str, seed: int, **fields):
    import transformers as tf

    config_cls, model_cls = getattr(tf, f"{prefix}Config"), getattr(tf, f"{prefix}ForCausalLM")
    return hf_random_model(config_cls(**COMMON, **fields), model_cls, seed)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """name -> (saved directory, the transformers model)."""
    built = {}
    for seed, (name, (prefix, fields)) in enumerate(CONFIGS.items()):
        hf = hf_model(prefix, seed, **fields)
        path = tmp_path_factory.mktemp(name)
        hf.save_pretrained(path)
        built[name] = (path, hf)
    return built


@pytest.fixture(scope="module")
def hf_tokens(checkpoints):
    """``hf_tokens(name, prompt, n)``: transformers' greedy continuation, memoized."""
    return greedy_memo(checkpoints)


def prompts(seed: int, lengths: list[int], prefix: int = 0) -> list[list[int]]:
    """Prompts of the given lengths; with ``prefix``, every prompt starts with the same ``prefix`` tokens."""
    rng = random.Random(seed)
    shared = [rng.randrange(3, VOCAB) for _ in range(prefix)]
    return [shared + [rng.randrange(3, VOCAB) for _ in range(n)] for n in lengths]


# -- the model -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_greedy_generate_matches_transformers(checkpoints, hf_tokens, name):
    model = load_model(checkpoints[name][0])
    for prompt in prompts(0, [1, 11]):
        assert greedy_generate(model, prompt, 6, ignore_eos=True) == hf_tokens(name, prompt, 6)


def test_configs_are_read_as_transformers_reads_them(checkpoints):
    v3 = ModelConfig.from_pretrained(checkpoints["dsv3-groups-yarn"][0])
    assert v3.mla.q_lora_rank == 12 and v3.mla.rope_interleave and v3.head_dim == 8
    assert v3.moe.sparse_layers == (1, 2) and v3.moe.scoring_func == "sigmoid" and v3.moe.correction_bias
    assert (v3.moe.num_expert_group, v3.moe.topk_group, v3.moe.routed_scaling_factor) == (4, 2, 2.5)
    assert v3.moe.shared_expert_intermediate_size == 16 and v3.moe.renormalize
    hf = checkpoints["dsv3-groups-yarn"][1].model.layers[0].self_attn
    assert mla_softmax_scale(16, v3.rope_scaling) == pytest.approx(hf.scaling, rel=1e-12)   # YaRN's mscale, squared
    lite = ModelConfig.from_pretrained(checkpoints["dsv3-lite-neox"][0])
    assert lite.mla.q_lora_rank is None and not lite.mla.rope_interleave and lite.moe.sparse_layers == (0, 1)
    assert lite.moe.shared_expert_intermediate_size == 0 and lite.mla.v_head_dim == 20
    v2 = ModelConfig.from_pretrained(checkpoints["dsv2-group-limited"][0])
    assert (v2.moe.scoring_func, v2.moe.num_expert_group, v2.moe.correction_bias) == ("softmax", 4, False)
    assert ModelConfig.from_pretrained(checkpoints["dsv2-lite"][0]).moe.num_expert_group == 1
    assert ModelConfig.from_pretrained(checkpoints["qwen3"][0]).qk_norm
    assert ModelConfig.from_pretrained(checkpoints["qwen3-moe"][0]).moe.sparse_layers == (0, 2)


def test_absorbed_decode_equals_the_expanded_form():
    """What the paged engine runs at decode (W_UK folded into the query, attention over latents, W_UV after)
    equals attention over expanded per-head keys and values."""
    g = torch.Generator().manual_seed(0)
    nh, dn, dr, dv, latent, n = 4, 8, 4, 6, 16, 11
    c, pe = torch.randn(n, latent, generator=g), torch.randn(n, dr, generator=g)
    kv_b = torch.randn(nh * (dn + dv), latent, generator=g) * 0.3
    q_nope, q_pe = torch.randn(1, nh, dn, generator=g), torch.randn(1, nh, dr, generator=g)
    w_uk, w_uv = split_kv_b_proj(kv_b, nh, dn, dv)
    keys, values = expand_latents(c, pe, w_uk, w_uv)
    expanded = causal_attention(torch.cat((q_nope, q_pe), -1), keys, values, n - 1, scale=0.3)
    block_size = 4   # the latents in a paged cache of 3 blocks, in the order of block table [2, 0, 1]
    c_cache, pe_cache = torch.full((3, block_size, 1, latent), float("nan")), torch.full((3, block_size, 1, dr), 0.0)
    table = torch.tensor([[2, 0, 1]], dtype=torch.int32)
    slots = torch.tensor([int(table[0, p // block_size]) * block_size + p % block_size for p in range(n)])
    ops.concat_and_cache_mla(c, pe, c_cache, pe_cache, slots.to(torch.int32), backend="cpu")
    latent_out = ops.mla_decode_attention(torch.einsum("bhd,hdl->bhl", q_nope, w_uk), q_pe, c_cache, pe_cache,
                                          table, torch.tensor([n], dtype=torch.int32), 0.3, backend="cpu")
    absorbed = torch.einsum("bhl,hvl->bhv", latent_out, w_uv)
    torch.testing.assert_close(absorbed, expanded, rtol=1e-5, atol=1e-5)


def test_the_extra_prediction_layer_of_a_v3_checkpoint_is_ignored(checkpoints, tmp_path):
    """DeepSeek-V3 checkpoints carry their multi-token-prediction module as layer ``num_hidden_layers``."""
    path = checkpoints["dsv3-groups-yarn"][0]
    tensors = load_file(str(path / "model.safetensors"))
    tensors["model.layers.3.eh_proj.weight"] = torch.zeros(32, 64)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text((path / "config.json").read_text())
    load_model(tmp_path)   # loads; a tensor of layer 4 would still be named as unexpected


@pytest.mark.parametrize("arch, changes, match", [
    ("DeepseekV3ForCausalLM", {"moe_layer_freq": 2}, "moe_layer_freq"),
    ("DeepseekV2ForCausalLM", {"norm_topk_prob": True}, "norm_topk_prob"),
    ("DeepseekV2ForCausalLM", {"topk_method": "noaux_tc"}, "topk_method"),
    ("DeepseekV3ForCausalLM", {"topk_method": "greedy"}, "noaux_tc"),
])
def test_unsupported_deepseek_settings_are_named(checkpoints, tmp_path, arch, changes, match):
    cfg = json.loads((checkpoints["dsv3-groups-yarn"][0] / "config.json").read_text())
    cfg.update(architectures=[arch], **changes)
    with pytest.raises(UnsupportedModelError, match=match):
        ModelConfig.from_dict(cfg)


def test_bad_latent_geometry_is_named(checkpoints):
    cfg = json.loads((checkpoints["dsv3-groups-yarn"][0] / "config.json").read_text())
    with pytest.raises(ValueError, match="kv_lora_rank"):
        ModelConfig.from_dict({**cfg, "kv_lora_rank": 0})
    with pytest.raises(ValueError, match="qk_rope_head_dim"):
        ModelConfig.from_dict({**cfg, "qk_rope_head_dim": 5})
    with pytest.raises(ValueError, match="n_group"):
        ModelConfig.from_dict({**cfg, "n_group": 5})


# -- the engine ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_engine_with_prefix_caching_chunked_prefill_and_preemption_matches_transformers(checkpoints, hf_tokens,
                                                                                      name):
    batch = prompts(1, [3, 14, 6, 1], prefix=9)   # four prompts that share 9 tokens (two blocks of 4)
    llm = LLM(checkpoints[name][0], block_size=4, num_kv_blocks=9, max_num_batched_tokens=8, backend="cpu")
    seen = []
    schedule = llm.engine.scheduler.schedule
    llm.engine.scheduler.schedule = lambda: seen.append(schedule()) or seen[-1]
    assert_engine_matches(llm, name, batch, hf_tokens)
    assert_engine_matches(llm, name, batch[:2], hf_tokens)   # again: the prompts' blocks are cached now
    stats = llm.engine.stats()
    assert stats["num_preemptions"] > 0
    assert any(not s.samples and s.start == 0 for out in seen for s in out.scheduled)   # a prompt was split
    assert stats["num_prefix_hit_tokens"] > 0


def test_latent_decode_is_captured_in_cpu_graphs(checkpoints, hf_tokens, tmp_path):
    """A DeepSeek model whose layers are all dense (first_k_dense_replace = every layer): the MLA decode step
    has no host reads, so its graphs capture and replay; the MoE layers would make it eager, as for Mixtral."""
    path = checkpoints["dsv3-groups-yarn"][0]
    cfg = json.loads((path / "config.json").read_text())
    batch = prompts(2, [5, 2, 9])
    with pytest.warns(RuntimeWarning, match="cannot be captured"):
        LLM(path, block_size=4, backend="cpu", enforce_eager=False, cudagraph_capture_sizes=[1, 2, 4])
    dense = tmp_path / "dense"
    dense.mkdir()
    (dense / "config.json").write_text(json.dumps({**cfg, "first_k_dense_replace": 3, "n_routed_experts": 0}))
    tensors = {k: v for k, v in load_file(str(path / "model.safetensors")).items()
               if ".mlp.experts." not in k and ".mlp.gate." not in k and ".shared_experts." not in k}
    generator = torch.Generator().manual_seed(0)
    for layer in (1, 2):   # give the former MoE layers a dense MLP of the config's intermediate size
        for w, shape in (("gate_proj", (48, 32)), ("up_proj", (48, 32)), ("down_proj", (32, 48))):
            tensors[f"model.layers.{layer}.mlp.{w}.weight"] = 0.2 * torch.randn(shape, generator=generator)
    save_file(tensors, str(dense / "model.safetensors"))
    model = load_model(dense)
    expected = [greedy_generate(model, p, 6, ignore_eos=True) for p in batch]
    llm = LLM(dense, block_size=4, backend="cpu", enforce_eager=False, cudagraph_capture_sizes=[1, 2, 4])
    assert [o.token_ids for o in llm.generate(batch, GREEDY)] == expected
    assert llm.engine.stats()["num_graph_steps"] > 0


def test_engine_under_tensor_and_expert_parallelism_matches_transformers(checkpoints, hf_tokens):
    """Two worker processes over gloo: the heads split (q_b_proj, kv_b_proj column-parallel, o_proj row-parallel),
    the latent cache whole on each rank, the experts placed whole on their owners (EP), the shared expert split."""
    name = "dsv3-groups-yarn"
    batch = prompts(3, [4, 10, 1])
    llm = LLM(checkpoints[name][0], block_size=4, backend="cpu", tensor_parallel_size=2,
              enable_expert_parallel=True)
    try:
        assert_engine_matches(llm, name, batch, hf_tokens)
    finally:
        llm.close()


def test_cli_makes_a_tiny_deepseek_that_transformers_agrees_with(tmp_path, capsys):
    from transformers import AutoModelForCausalLM

    assert generate_main(["--make-tiny", str(tmp_path), "--arch", "deepseek_v3", "--seed", "1"]) == 0
    prompt = [5, 17, 33, 8]
    assert generate_main(["--model", str(tmp_path), "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens", "5",
                          "--ignore-eos", "--backend", "cpu"]) == 0
    hf = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager", dtype=torch.float32).eval()
    assert capsys.readouterr().out.strip().splitlines()[-1] == ",".join(map(str, hf_greedy(hf, prompt, 5)))


@pytest.mark.parametrize("name", ["dsv3-groups-yarn", "dsv2-lite", "qwen3-moe"])
def test_engine_on_triton_interpreted_matches_transformers(checkpoints, hf_tokens, name):
    """The Triton kernels (MLA decode, latent cache, expanded prefill, grouped routing), run in the Triton
    interpreter on the CPU."""
    batch = prompts(4, [4, 9])
    llm = LLM(checkpoints[name][0], block_size=16, backend="triton", max_num_batched_tokens=16)
    assert_engine_matches(llm, name, batch, hf_tokens, SamplingParams(temperature=0, max_tokens=3, ignore_eos=True))


@pytest.mark.parametrize("name", ["dsv3-groups-yarn", "dsv3-lite-neox", "dsv2-group-limited", "qwen3"])
def test_engine_on_npu_emulated_matches_transformers(checkpoints, hf_tokens, name, emulated_npu):
    """The npu kernels as vllm-ascend calls torch_npu, verified against an emulation of torch_npu semantics (not
    run on Ascend hardware here), with preemption and chunked prefill in blocks of 16."""
    batch = prompts(5, [6, 19, 3])
    llm = LLM(checkpoints[name][0], block_size=16, num_kv_blocks=3, max_num_batched_tokens=16, backend="npu")
    assert_engine_matches(llm, name, batch, hf_tokens, SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
