"""The model against Hugging Face transformers: tiny random checkpoints built and saved with
transformers, logits within tolerance and greedy tokens equal token for token, on the CPU kernels,
the Triton kernels (run in the Triton interpreter on the CPU) and the npu kernels (verified against an
emulation of torch_npu semantics; not run on Ascend hardware here). Plus loading errors and the CLI."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from mini_platform import ops
from mini_platform.generate import main as generate_main
from mini_platform.model import (CausalLM, CheckpointError, ContiguousAttention, ModelConfig, UnsupportedModelError,
                                 greedy_generate, load_model, make_tiny_checkpoint)
from mini_platform.model.tiny import tiny_config

PROMPT = [3, 17, 5, 42, 8, 11, 60, 2, 9, 33]
NEW_TOKENS = 12


# -- helpers -------------------------------------------------------------------------------------
def hf_model(arch: str, seed: int = 0, default_init: bool = False, **fields):
    """A transformers model (fp32, eager attention). Weights are redrawn wide enough that greedy
    decoding has clear winners, unless ``default_init`` keeps transformers' own std-0.02 init."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    config_cls, model_cls = {"llama": (LlamaConfig, LlamaForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM)}[arch]
    return hf_random_model(config_cls(num_hidden_layers=2, max_position_embeddings=128, **fields), model_cls, seed,
                           wide=not default_init)


def hf_random_model(config, model_cls, seed: int, wide: bool = True):
    """``model_cls`` built from ``config`` (fp32, eager attention) with seeded weights, redrawn wide (norms near 1,
    the rest std 0.2) unless ``wide`` is False. DeepSeek-V3's ``e_score_correction_bias``, a zero buffer at
    init, is drawn too, so that choosing and weighting the experts differ."""
    torch.manual_seed(seed)
    model = model_cls._from_config(config, attn_implementation="eager", dtype=torch.float32)
    if wide:
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
            for name, b in model.named_buffers():
                if name.endswith("e_score_correction_bias"):
                    b.copy_(0.3 * torch.randn_like(b))
    return model.eval()


def greedy_memo(checkpoints: dict):
    """``generate(name, prompt, n)``: transformers' greedy continuation by ``checkpoints[name][1]``, memoized."""
    memo = {}

    def generate(name: str, prompt: list[int], n: int) -> list[int]:
        key = (name, tuple(prompt), n)
        if key not in memo:
            memo[key] = hf_greedy(checkpoints[name][1], prompt, n)
        return memo[key]
    return generate


@torch.inference_mode()
def hf_greedy(model, prompt: list[int], new_tokens: int = NEW_TOKENS) -> list[int]:
    ids = torch.tensor([prompt])  # an explicit mask: without one, transformers would mask token 0 as padding
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                         eos_token_id=None, pad_token_id=0)
    return out[0, len(prompt):].tolist()


def hf_from_dir(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager", dtype=torch.float32).eval()


@torch.inference_mode()
def hf_logits(model, prompt: list[int]) -> torch.Tensor:
    return model(torch.tensor([prompt])).logits[0].float()


@torch.inference_mode()
def prefill_logits(model: CausalLM, prompt: list[int]) -> torch.Tensor:
    attention = ContiguousAttention.for_model(model, len(prompt))
    return model.compute_logits(model(torch.tensor(prompt), torch.arange(len(prompt)), attention))


def assert_matches_hf(model: CausalLM, hf, atol: float = 1e-4, new_tokens: int = NEW_TOKENS) -> None:
    torch.testing.assert_close(prefill_logits(model, PROMPT), hf_logits(hf, PROMPT), atol=atol, rtol=1e-4)
    assert greedy_generate(model, PROMPT, new_tokens, ignore_eos=True) == hf_greedy(hf, PROMPT, new_tokens)


# name -> (arch, config fields, save_pretrained kwargs, default_init)
CONFIGS = {
    "llama-mha-tied": ("llama", dict(vocab_size=97, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                     num_key_value_heads=4, tie_word_embeddings=True), {}, False),
    "llama-gqa4-hd16-bias": ("llama", dict(vocab_size=131, hidden_size=64, intermediate_size=96, num_attention_heads=8,
                                           num_key_value_heads=2, head_dim=16, attention_bias=True, mlp_bias=True,
                                           rope_theta=500.0), {}, False),
    "llama-mqa-llama3-rope": ("llama", dict(vocab_size=101, hidden_size=48, intermediate_size=80, num_attention_heads=6,
                                            num_key_value_heads=1, rope_parameters={
                                                "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                "original_max_position_embeddings": 64}), {}, False),
    "llama-linear-rope-default-init": ("llama", dict(vocab_size=89, hidden_size=32, intermediate_size=64,
                                                     num_attention_heads=2, num_key_value_heads=1,
                                                     rope_scaling={"rope_type": "linear", "factor": 2.0},
                                                     rope_theta=300.0), {}, True),
    "qwen2-gqa3-tied": ("qwen2", dict(vocab_size=151, hidden_size=48, intermediate_size=64, num_attention_heads=6,
                                      num_key_value_heads=2, tie_word_embeddings=True), {}, False),
    "qwen2-mha-hd32-sharded": ("qwen2", dict(vocab_size=113, hidden_size=64, intermediate_size=128,
                                             num_attention_heads=2, num_key_value_heads=2),
                               {"max_shard_size": "40KB"}, False),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """name -> (saved directory, the transformers model)."""
    built = {}
    for name, (arch, fields, save_kwargs, default_init) in CONFIGS.items():
        hf = hf_model(arch, seed=len(built), default_init=default_init, **fields)
        path = tmp_path_factory.mktemp(name)
        hf.save_pretrained(path, **save_kwargs)
        built[name] = (path, hf)
    return built


# -- parity with transformers --------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cpu_matches_transformers(checkpoints, name):
    path, hf = checkpoints[name]
    with ops.use_backend("cpu"):
        assert_matches_hf(load_model(path), hf)


# Real config.json / checkpoint variants: a saved checkpoint copied and edited, then read by both
# transformers and mini_platform. name -> (base checkpoint, keys to drop, weight edit, config changes)
def _untie_lm_head(t):  # tied config, but a stored lm_head that differs: transformers keeps it separate
    t["lm_head.weight"] = t["model.embed_tokens.weight"].flip(0)


def _lm_head_only(t):  # tied config, the tensor stored under lm_head.weight only: it serves as the embedding
    t["lm_head.weight"] = t.pop("model.embed_tokens.weight")


def _to_bf16(t):
    t.update({k: v.bfloat16() for k, v in t.items()})


LEGACY_ROPE = ("rope_parameters",)
VARIANTS = {
    "head_dim-null-kv-heads-absent": ("llama-mha-tied", ("num_key_value_heads",), None, {"head_dim": None}),
    "no-architectures-uses-model_type": ("qwen2-gqa3-tied", ("architectures",), None, {}),
    "rope_scaling-overrides-rope_parameters": ("llama-linear-rope-default-init", (), None, {
        "rope_parameters": {"rope_type": "default", "rope_theta": 300.0}, "rope_scaling": {"type": "linear", "factor": 2.0}}),
    "rope_scaling-default-type": ("llama-gqa4-hd16-bias", LEGACY_ROPE, None, {
        "rope_theta": 500.0, "rope_scaling": {"rope_type": "default"}}),
    "llama3-original-max-defaults": ("llama-mqa-llama3-rope", LEGACY_ROPE, None, {"rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}}),
    "yarn": ("qwen2-gqa3-tied", LEGACY_ROPE, None, {
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}}),
    "dynamic-within-context": ("llama-mha-tied", LEGACY_ROPE, None, {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}),
    "qwen2-sliding-no-sliding-layer": ("qwen2-gqa3-tied", ("layer_types",), None, {
        "use_sliding_window": True, "sliding_window": 4, "max_window_layers": 28}),
    "qwen2-sliding-window-covers-context": ("qwen2-mha-hd32-sharded", ("layer_types",), None, {
        "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 0}),
    "tied-but-lm_head-differs": ("llama-mha-tied", (), _untie_lm_head, {}),
    "tied-lm_head-only": ("qwen2-gqa3-tied", (), _lm_head_only, {}),
    "bf16-checkpoint-as-fp32-extra-keys": ("llama-gqa4-hd16-bias", ("dtype",), _to_bf16, {
        "torch_dtype": "bfloat16", "pretraining_tp": 2, "attention_dropout": 0.1, "eos_token_id": [2, 7],
        "some_future_key": {"a": 1}}),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_config_variants_match_transformers(checkpoints, tmp_path, name):
    base, drop, edit_weights, changes = VARIANTS[name]
    path = shutil.copytree(checkpoints[base][0], tmp_path / name)
    config = {k: v for k, v in json.loads((path / "config.json").read_text()).items() if k not in drop}
    (path / "config.json").write_text(json.dumps({**config, **changes}))
    if edit_weights:
        _rewrite_weights(path, edit_weights)
    with ops.use_backend("cpu"):
        assert_matches_hf(load_model(path), hf_from_dir(path))


def test_generation_config_eos_wins_as_in_transformers(checkpoints, tmp_path):
    """transformers' generate stops at generation_config.json's eos_token_id, not config.json's."""
    expected = hf_greedy(checkpoints["llama-mha-tied"][1], PROMPT, 6)
    path = shutil.copytree(checkpoints["llama-mha-tied"][0], tmp_path / "m")
    _edit_config(path, eos_token_id=999)
    generation = json.loads((path / "generation_config.json").read_text())
    (path / "generation_config.json").write_text(json.dumps({**generation, "eos_token_id": [998, expected[2]]}))
    ids = torch.tensor([PROMPT])
    with torch.inference_mode():
        theirs = hf_from_dir(path).generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6,
                                            do_sample=False, pad_token_id=0)[0, len(PROMPT):].tolist()
    assert theirs == expected[:expected.index(expected[2]) + 1]
    assert greedy_generate(load_model(path), PROMPT, 6) == theirs


def test_sharded_checkpoint_really_is_sharded(checkpoints):
    path, _ = checkpoints["qwen2-mha-hd32-sharded"]
    assert (path / "model.safetensors.index.json").is_file()
    assert len(list(path.glob("*.safetensors"))) >= 2


def test_config_reads_geometry(checkpoints):
    config = ModelConfig.from_pretrained(checkpoints["llama-gqa4-hd16-bias"][0])
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (8, 2, 16)
    assert (config.q_size, config.kv_size, config.num_queries_per_kv) == (128, 32, 4)
    assert config.rope_theta == 500.0 and config.rope_scaling is None
    assert config.qkv_bias and config.o_proj_bias and config.mlp_bias
    qwen = ModelConfig.from_pretrained(checkpoints["qwen2-gqa3-tied"][0])
    assert qwen.qkv_bias and not qwen.o_proj_bias and qwen.tie_word_embeddings and qwen.head_dim == 8


def test_chunked_prefill_and_decode_agree_with_one_prefill(checkpoints):
    """The contiguous cache appends at the right offset: 4 + 5 + 1 tokens give the logits of 10 at once."""
    model = load_model(checkpoints["qwen2-gqa3-tied"][0])
    full = prefill_logits(model, PROMPT)
    attention = ContiguousAttention.for_model(model, len(PROMPT))
    chunks = []
    with torch.inference_mode():
        for start, end in ((0, 4), (4, 9), (9, 10)):
            hidden = model(torch.tensor(PROMPT[start:end]), torch.arange(start, end), attention)
            chunks.append(model.compute_logits(hidden))
    torch.testing.assert_close(torch.cat(chunks), full, atol=1e-5, rtol=1e-5)
    assert attention.lengths == [10, 10]


def test_greedy_stops_at_eos(checkpoints):
    path, hf = checkpoints["llama-mha-tied"]
    expected = hf_greedy(hf, PROMPT, 6)
    model = load_model(path)
    model.config = ModelConfig.from_dict({**model.config.raw, "eos_token_id": [999, expected[2]]})
    assert greedy_generate(model, PROMPT, 6) == expected[:expected.index(expected[2]) + 1]
    assert greedy_generate(model, PROMPT, 6, ignore_eos=True) == expected


def test_bfloat16_load_is_close(checkpoints):
    path, hf = checkpoints["llama-gqa4-hd16-bias"]
    model = load_model(path, dtype=torch.bfloat16)
    assert model.dtype == torch.bfloat16
    logits = prefill_logits(model, PROMPT)
    assert logits.dtype == torch.float32
    torch.testing.assert_close(logits, hf_logits(hf, PROMPT), atol=0.3, rtol=0.05)


# -- other kernel backends swapped in ------------------------------------------------------------
def test_triton_kernels_match_transformers(checkpoints):
    """Triton kernels, run in the Triton interpreter on the CPU (TRITON_INTERPRET=1)."""
    path, hf = checkpoints["llama-mqa-llama3-rope"]
    with ops.use_backend("triton"):
        assert_matches_hf(load_model(path), hf, new_tokens=8)


@pytest.mark.parametrize("name", ["llama-gqa4-hd16-bias", "qwen2-gqa3-tied"])
def test_npu_kernels_match_transformers(checkpoints, name, emulated_npu):
    """npu kernels: verified against an emulation of torch_npu semantics; not run on Ascend hardware here."""
    path, hf = checkpoints[name]
    with ops.use_backend("npu"):
        assert_matches_hf(load_model(path), hf)


def test_every_layer_goes_through_the_ops_backend(checkpoints, monkeypatch):
    """Swapping the backend swaps every kernel: count calls per kernel name through get_kernel."""
    calls = []
    real = ops.get_kernel
    monkeypatch.setattr(ops, "get_kernel", lambda kernel, backend=None: calls.append(kernel) or real(kernel, backend))
    model = load_model(checkpoints["llama-mha-tied"][0])
    prefill_logits(model, PROMPT[:3])
    layers = model.config.num_hidden_layers
    assert calls.count("rms_norm") == 1
    assert calls.count("fused_add_rms_norm") == 2 * layers   # input (layers 1..), post-attention, final
    assert calls.count("rotary_embedding") == layers and calls.count("silu_and_mul") == layers


# -- the tiny checkpoint maker -------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "qwen3_moe", "deepseek_v2"])   # deepseek_v3: the CLI test
def test_tiny_checkpoint_loads_in_transformers_and_matches(tmp_path, arch):
    from transformers import AutoModelForCausalLM

    path = make_tiny_checkpoint(tmp_path / arch, arch=arch, seed=1, vocab_size=91, tie_word_embeddings=arch == "qwen2")
    hf = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager", dtype=torch.float32).eval()
    assert_matches_hf(load_model(path), hf)


def test_tiny_checkpoint_is_deterministic_per_seed(tmp_path):
    a, b, c = (load_file(make_tiny_checkpoint(tmp_path / str(i), seed=s) / "model.safetensors")
               for i, s in enumerate((5, 5, 6)))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["lm_head.weight"], c["lm_head.weight"])


# -- clear errors --------------------------------------------------------------------------------
def _edit_config(path, **changes):
    config = json.loads((path / "config.json").read_text())
    config.update(changes)
    (path / "config.json").write_text(json.dumps(config))


def test_unsupported_architecture_is_named(tmp_path):
    path = make_tiny_checkpoint(tmp_path)
    _edit_config(path, architectures=["MistralForCausalLM"])
    with pytest.raises(UnsupportedModelError, match="MistralForCausalLM"):
        load_model(path)


@pytest.mark.parametrize("arch, changes, match", [
    ("llama", {"rope_scaling": {"rope_type": "longrope", "factor": 4.0}}, "longrope"),
    ("llama", {"hidden_act": "gelu"}, "gelu"),
    ("qwen2", {"use_sliding_window": True, "sliding_window": 16, "max_window_layers": 1}, r"sliding.*layers \[1\]"),
])
def test_unsupported_features_are_named(tmp_path, arch, changes, match):
    path = make_tiny_checkpoint(tmp_path, arch=arch)
    _edit_config(path, **changes)
    with pytest.raises(UnsupportedModelError, match=match):
        load_model(path)


@pytest.mark.parametrize("rope, missing", [({"rope_type": "linear"}, "factor"),
                                           ({"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0}, "high_freq_factor")])
def test_incomplete_rope_scaling_is_named(rope, missing):
    with pytest.raises(ValueError, match=missing):
        ModelConfig.from_dict(tiny_config(rope_scaling=rope))


def test_bad_geometry_is_rejected():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        ModelConfig.from_dict({"architectures": ["LlamaForCausalLM"], "vocab_size": 10, "hidden_size": 12,
                               "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 6,
                               "num_key_value_heads": 4})


def _rewrite_weights(path, edit):
    tensors = load_file(path / "model.safetensors")
    edit(tensors)
    save_file(tensors, path / "model.safetensors")


def test_missing_tensor_is_named(tmp_path):
    path = make_tiny_checkpoint(tmp_path)
    _rewrite_weights(path, lambda t: t.pop("model.layers.1.self_attn.k_proj.weight"))
    with pytest.raises(CheckpointError, match=r"lacks .*model\.layers\.1\.self_attn\.k_proj\.weight"):
        load_model(path)


def test_unexpected_and_misshapen_tensors_are_named(tmp_path):
    path = make_tiny_checkpoint(tmp_path)
    _rewrite_weights(path, lambda t: t.update({"model.layers.9.mlp.up_proj.weight": torch.zeros(2, 2)}))
    with pytest.raises(CheckpointError, match=r"no parameter .*model\.layers\.9\.mlp\.up_proj\.weight"):
        load_model(path)
    _rewrite_weights(path, lambda t: t.update({"model.layers.9.mlp.up_proj.weight": torch.zeros(2, 2),
                                               "model.norm.weight": torch.ones(7)}))
    with pytest.raises(CheckpointError, match=r"model\.norm\.weight .*\(7,\)"):
        load_model(path)


def test_missing_files_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_model(tmp_path)
    path = make_tiny_checkpoint(tmp_path / "m")
    (path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no \\*.safetensors"):
        load_model(path)


# -- the command line ----------------------------------------------------------------------------
def test_cli_generates_what_greedy_generate_does(tmp_path, capsys):
    path = make_tiny_checkpoint(tmp_path, arch="qwen2", seed=2)
    assert generate_main(["--model", str(path), "--prompt-ids", "4, 8,15", "--max-tokens", "6", "--ignore-eos"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == ",".join(map(str, greedy_generate(load_model(path), [4, 8, 15], 6, ignore_eos=True)))


@pytest.mark.parametrize("args, match", [
    (["--prompt-ids", "1,x"], "comma-separated integers"),
    (["--prompt-ids", "1,100000"], "out of range"),
    (["--prompt-ids", "1", "--max-tokens", "0"], "at least 1"),
    (["--prompt-ids", "1", "--max-tokens", "600"], "max_position_embeddings"),
])
def test_cli_bad_input_exits_2(tmp_path, capsys, args, match):
    path = make_tiny_checkpoint(tmp_path)
    with pytest.raises(SystemExit) as exc:
        generate_main(["--model", str(path), *args])
    assert exc.value.code == 2
    assert match in capsys.readouterr().err


def test_cli_make_tiny_then_generate_as_a_module(tmp_path, capsys):
    assert generate_main(["--make-tiny", str(tmp_path / "t"), "--arch", "qwen2", "--seed", "4"]) == 0
    assert ModelConfig.from_pretrained(tmp_path / "t").architecture == "Qwen2ForCausalLM"
    out = subprocess.run([sys.executable, "-m", "mini_platform.generate", "--model", str(tmp_path / "t"),
                          "--prompt-ids", "7,1", "--max-tokens", "5", "--ignore-eos"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    expected = greedy_generate(load_model(tmp_path / "t"), [7, 1], 5, ignore_eos=True)
    assert out.stdout.strip().splitlines()[-1] == ",".join(map(str, expected))
