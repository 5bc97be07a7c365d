"""Mixtral and Qwen2-MoE against Hugging Face transformers: tiny random checkpoints built and saved with
transformers, greedy tokens equal token for token (fp32) through ``greedy_generate``, the engine (``LLM``,
also under preemption and chunked prefill) and the CLI, on the CPU kernels, the Triton kernels (run in
the Triton interpreter on the CPU) and the npu kernels (verified against an emulation of torch_npu
semantics; not run on Ascend hardware here). Plus expert maps, refusals and loading errors."""
from __future__ import annotations

import json
import random

import pytest
import torch
from safetensors.torch import load_file, save_file

from mini_platform import LLM, SamplingParams, ops
from mini_platform.generate import main as generate_main
from mini_platform.model import (CheckpointError, ModelConfig, SparseMoeBlock, UnsupportedModelError,
                                 expert_map_for_rank, greedy_generate, load_model, make_tiny_checkpoint)
from test_model import PROMPT, greedy_memo, hf_from_dir, hf_greedy, hf_logits, hf_random_model, prefill_logits

pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")  # transformers, shared size 0
VOCAB = 97
COMMON = dict(vocab_size=VOCAB, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=128, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
# name -> (architecture, config fields, save_pretrained kwargs)
CONFIGS = {
    "mixtral-e4-k2": ("mixtral", dict(intermediate_size=48, num_hidden_layers=2, num_local_experts=4,
                                      num_experts_per_tok=2), {}),
    "mixtral-e8-k3-sharded": ("mixtral", dict(intermediate_size=24, num_hidden_layers=2, num_local_experts=8,
                                              num_experts_per_tok=3), {"max_shard_size": "40KB"}),
    "qwen2moe-shared-norm-dense-layer1": ("qwen2_moe", dict(
        intermediate_size=48, moe_intermediate_size=24, shared_expert_intermediate_size=40, num_hidden_layers=3,
        num_experts=6, num_experts_per_tok=2, norm_topk_prob=True, mlp_only_layers=[1]), {}),
    "qwen2moe-no-shared-sparse-step2": ("qwen2_moe", dict(
        intermediate_size=40, moe_intermediate_size=16, shared_expert_intermediate_size=0, num_hidden_layers=2,
        num_experts=5, num_experts_per_tok=3, norm_topk_prob=False, decoder_sparse_step=2), {}),
}
GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)


def hf_moe_model(arch: str, seed: int, **fields):
    import transformers as tf

    config_cls, model_cls = {"mixtral": (tf.MixtralConfig, tf.MixtralForCausalLM),
                             "qwen2_moe": (tf.Qwen2MoeConfig, tf.Qwen2MoeForCausalLM)}[arch]
    return hf_random_model(config_cls(**COMMON, **fields), model_cls, seed)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """name -> (saved directory, the transformers model)."""
    built = {}
    for seed, (name, (arch, fields, save_kwargs)) in enumerate(CONFIGS.items()):
        hf = hf_moe_model(arch, seed, **fields)
        path = tmp_path_factory.mktemp(name)
        hf.save_pretrained(path, **save_kwargs)
        built[name] = (path, hf)
    return built


@pytest.fixture(scope="module")
def hf_tokens(checkpoints):
    """``hf_tokens(name, prompt, n)``: transformers' greedy continuation, memoized."""
    return greedy_memo(checkpoints)


@pytest.fixture
def kernel_backend(request):
    """``cpu``, or ``npu`` inside the torch_npu emulation (skipped where a real torch_npu is installed)."""
    if request.param == "npu":
        request.getfixturevalue("emulated_npu")
    return request.param


def prompts(seed: int, lengths: list[int]) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(3, VOCAB) for _ in range(n)] for n in lengths]


def assert_engine_matches(llm: LLM, name: str, batch: list[list[int]], hf_tokens, params=GREEDY) -> None:
    outputs = llm.generate(batch, params)
    for out, prompt in zip(outputs, batch):
        assert out.token_ids == hf_tokens(name, prompt, params.max_tokens), f"prompt of {len(prompt)} tokens"


# -- greedy_generate and logits ----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cpu_matches_transformers(checkpoints, hf_tokens, name):
    path, hf = checkpoints[name]
    with ops.use_backend("cpu"):
        model = load_model(path)
        torch.testing.assert_close(prefill_logits(model, PROMPT), hf_logits(hf, PROMPT), atol=1e-4, rtol=1e-4)
        assert greedy_generate(model, PROMPT, 12, ignore_eos=True) == hf_tokens(name, PROMPT, 12)


@pytest.mark.parametrize("routing", ["v1", "v2"])
@pytest.mark.parametrize("name", ["mixtral-e8-k3-sharded", "qwen2moe-shared-norm-dense-layer1"])
def test_npu_matches_transformers(checkpoints, hf_tokens, name, routing, emulated_npu, monkeypatch):
    """npu kernels, both call sequences: verified against an emulation of torch_npu semantics."""
    monkeypatch.setenv("MINI_PLATFORM_NPU_MOE_ROUTING", routing)
    with ops.use_backend("npu"):
        assert greedy_generate(load_model(checkpoints[name][0]), PROMPT, 8, ignore_eos=True) == hf_tokens(name, PROMPT, 8)


def test_loads_are_uneven_and_some_experts_idle(checkpoints, monkeypatch):
    """The parity cases are not vacuous: during the prompt some experts get several tokens and some none."""
    loads = []
    real = ops.moe_topk_softmax

    def recording(logits, top_k, renormalize, **kw):
        weights, ids = real(logits, top_k, renormalize, **kw)
        loads.append(torch.bincount(ids.flatten().long(), minlength=logits.shape[1]))
        return weights, ids
    monkeypatch.setattr(ops, "moe_topk_softmax", recording)
    prefill_logits(load_model(checkpoints["mixtral-e8-k3-sharded"][0]), PROMPT[:3])
    assert any(load.eq(0).any() for load in loads) and any(load.max() >= 2 for load in loads)


def test_every_moe_layer_goes_through_the_ops_backend(checkpoints, monkeypatch):
    calls = []
    real = ops.get_kernel
    monkeypatch.setattr(ops, "get_kernel", lambda kernel, backend=None: calls.append(kernel) or real(kernel, backend))
    model = load_model(checkpoints["qwen2moe-shared-norm-dense-layer1"][0])
    prefill_logits(model, PROMPT[:3])
    sparse = len(model.config.moe.sparse_layers)
    assert sparse == 2                          # layers 0 and 2; layer 1 is dense (mlp_only_layers)
    assert calls.count("moe_topk_softmax") == sparse and calls.count("fused_experts") == sparse
    assert calls.count("silu_and_mul") == 1 + sparse   # the dense layer and each shared expert


# -- the engine ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_engine_matches_transformers(checkpoints, hf_tokens, name):
    batch = prompts(0, [1, 7, 16, 3])
    llm = LLM(checkpoints[name][0], block_size=4, backend="cpu")
    assert_engine_matches(llm, name, batch, hf_tokens)


@pytest.mark.parametrize("kernel_backend", ["cpu", "npu"], indirect=True)
@pytest.mark.parametrize("name", ["mixtral-e4-k2", "qwen2moe-shared-norm-dense-layer1"])
def test_engine_under_preemption_matches_transformers(checkpoints, hf_tokens, name, kernel_backend):
    batch = prompts(1, [9, 14, 6, 11])
    block_size = 16 if kernel_backend == "npu" else 4     # ATB paged attention serves multiples of 16
    llm = LLM(checkpoints[name][0], block_size=block_size, num_kv_blocks=9 if block_size == 4 else 3,
              enable_prefix_caching=False, backend=kernel_backend)
    assert_engine_matches(llm, name, batch, hf_tokens)
    assert llm.engine.stats()["num_preemptions"] > 0


@pytest.mark.parametrize("kernel_backend", ["cpu", "npu"], indirect=True)
@pytest.mark.parametrize("name", ["mixtral-e8-k3-sharded", "qwen2moe-no-shared-sparse-step2"])
def test_engine_with_chunked_prefill_matches_transformers(checkpoints, hf_tokens, name, kernel_backend):
    batch = prompts(2, [23, 4, 15])
    llm = LLM(checkpoints[name][0], block_size=16 if kernel_backend == "npu" else 8, max_num_batched_tokens=5,
              backend=kernel_backend)
    seen = []
    schedule = llm.engine.scheduler.schedule
    llm.engine.scheduler.schedule = lambda: seen.append(schedule()) or seen[-1]
    assert_engine_matches(llm, name, batch, hf_tokens)
    assert max(out.num_tokens for out in seen) <= 5
    assert any(not s.samples and s.start == 0 for out in seen for s in out.scheduled)   # a prompt was split


@pytest.mark.parametrize("name", ["mixtral-e4-k2", "qwen2moe-shared-norm-dense-layer1"])
def test_engine_on_triton_interpreted_matches_transformers(checkpoints, hf_tokens, name):
    batch = prompts(3, [4, 9])
    llm = LLM(checkpoints[name][0], block_size=16, backend="triton", max_num_batched_tokens=16)
    assert_engine_matches(llm, name, batch, hf_tokens, SamplingParams(temperature=0, max_tokens=3, ignore_eos=True))


@pytest.mark.parametrize("name", ["mixtral-e4-k2", "qwen2moe-no-shared-sparse-step2"])
def test_engine_on_npu_emulated_matches_transformers(checkpoints, hf_tokens, name, emulated_npu):
    batch = prompts(4, [6, 19])
    llm = LLM(checkpoints[name][0], block_size=16, backend="npu", max_num_batched_tokens=16)
    assert_engine_matches(llm, name, batch, hf_tokens, SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))


# -- the command line --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mixtral-e4-k2", "qwen2moe-shared-norm-dense-layer1"])
def test_cli_matches_transformers(checkpoints, hf_tokens, name, capsys):
    args = ["--model", str(checkpoints[name][0]), "--prompt-ids", ",".join(map(str, PROMPT)), "--max-tokens", "6",
            "--ignore-eos", "--backend", "cpu"]
    assert generate_main(args) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == ",".join(map(str, hf_tokens(name, PROMPT, 6)))


@pytest.mark.parametrize("arch", ["mixtral", "qwen2_moe"])
def test_make_tiny_moe_checkpoint_matches_transformers(tmp_path, arch, capsys):
    assert generate_main(["--make-tiny", str(tmp_path / arch), "--arch", arch, "--seed", "3"]) == 0
    config = ModelConfig.from_pretrained(tmp_path / arch)
    assert config.moe is not None and config.moe.num_experts == 4
    assert greedy_generate(load_model(tmp_path / arch), PROMPT, 6, ignore_eos=True) == \
        hf_greedy(hf_from_dir(tmp_path / arch), PROMPT, 6)


# -- expert maps -------------------------------------------------------------------------------------
def moe_blocks(model) -> list[SparseMoeBlock]:
    return [m for m in model.modules() if isinstance(m, SparseMoeBlock)]


@pytest.mark.parametrize("placement", ["linear", "round_robin"])
def test_expert_map_loads_only_owned_experts_and_shares_sum_to_the_layer(checkpoints, placement):
    path = checkpoints["mixtral-e8-k3-sharded"][0]
    full = moe_blocks(load_model(path))
    x = torch.randn(9, 32, generator=torch.Generator().manual_seed(0))
    totals = [torch.zeros(9, 32) for _ in full]
    for rank in range(3):
        expert_map = expert_map_for_rank(8, 3, rank, placement)
        owned = [g for g in range(8) if expert_map[g] >= 0]
        for i, (block, whole) in enumerate(zip(moe_blocks(load_model(path, expert_map=expert_map)), full)):
            assert block.local_experts == owned and block.w13.shape[0] == len(owned)
            assert torch.equal(block.w13, whole.w13[owned]) and torch.equal(block.w2, whole.w2[owned])
            totals[i] += block.routed_experts(x, *whole.route(x))
    for total, whole in zip(totals, full):
        torch.testing.assert_close(total, whole(x), atol=1e-5, rtol=1e-5)


def test_bad_expert_maps_are_rejected(checkpoints):
    path = checkpoints["mixtral-e4-k2"][0]
    with pytest.raises(ValueError, match="local indices 0..L-1"):
        load_model(path, expert_map=torch.tensor([0, 0, -1, -1], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"shape \[4\]"):
        load_model(path, expert_map=torch.tensor([0, 1, -1], dtype=torch.int32))


# -- config, refusals, loading errors ----------------------------------------------------------------
def test_qwen2_moe_config_is_read_as_transformers_reads_it(checkpoints):
    moe = ModelConfig.from_pretrained(checkpoints["qwen2moe-no-shared-sparse-step2"][0]).moe
    assert moe.sparse_layers == (1,) and moe.top_k == 3 and not moe.renormalize
    assert moe.shared_expert_intermediate_size == 0 and moe.intermediate_size == 16
    mixtral = ModelConfig.from_pretrained(checkpoints["mixtral-e4-k2"][0])
    assert mixtral.moe.renormalize and mixtral.moe.block_name == "block_sparse_moe" and not mixtral.qkv_bias


def _edit_config(path, **changes):
    config = json.loads((path / "config.json").read_text())
    config.update(changes)
    (path / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("arch, changes, match", [
    ("mixtral", {"architectures": ["OlmoeForCausalLM"]}, "q/k RMSNorm"),
    ("qwen2_moe", {"architectures": ["PhimoeForCausalLM"]}, "sparsemixer"),
    ("qwen2_moe", {"n_group": 4, "topk_group": 2}, "n_group"),
    ("mixtral", {"sliding_window": 16}, r"sliding.*layers \[0, 1\]"),
    ("qwen2_moe", {"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 2}, r"sliding.*layers \[0\]"),
])
def test_unsupported_moe_features_are_named(tmp_path, arch, changes, match):
    path = make_tiny_checkpoint(tmp_path, arch=arch)
    _edit_config(path, **changes)
    with pytest.raises(UnsupportedModelError, match=match):
        load_model(path)


@pytest.mark.parametrize("layers", ["0", 1, [0.0]])
def test_mlp_only_layers_must_be_a_list_of_layer_indices(tmp_path, layers):
    # A string "0" used to be read as the set {"0"}: no layer dense, silently (transformers fails on it).
    path = make_tiny_checkpoint(tmp_path, arch="qwen2_moe")
    _edit_config(path, mlp_only_layers=layers)
    with pytest.raises(ValueError, match="mlp_only_layers"):
        ModelConfig.from_pretrained(path)


def test_missing_and_foreign_expert_tensors_are_named(tmp_path):
    path = make_tiny_checkpoint(tmp_path, arch="mixtral")
    tensors = load_file(path / "model.safetensors")
    tensors.pop("model.layers.1.block_sparse_moe.experts.3.w2.weight")
    save_file(tensors, path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"lacks .*experts\.3\.w2\.weight"):
        load_model(path)
    tensors["model.layers.1.block_sparse_moe.experts.3.w2.weight"] = torch.zeros(64, 128)
    tensors["model.layers.1.block_sparse_moe.experts.9.w1.weight"] = torch.zeros(128, 64)   # only 4 experts
    save_file(tensors, path / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"no parameter .*experts\.9\.w1\.weight"):
        load_model(path)
