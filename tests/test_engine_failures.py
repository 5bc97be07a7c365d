"""The engine after a failure and with bad input: checked up front, named clearly, and recoverable.

Each test breaks one thing (a parameter, a file, the environment, a step in the middle of a run) and
checks that the error names it and says what to do, and that the engine still works afterwards.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

from mini_platform import LLM, SamplingParams, envs
from mini_platform.generate import main as generate_main
from mini_platform.model import ModelConfig, make_tiny_checkpoint

GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
PROMPTS = [[5, 9, 13], [7, 1, 200, 3, 3], [42]]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "llama", "llama", seed=3)


@pytest.fixture(scope="module")
def reference(tiny) -> list[list[int]]:
    return [o.token_ids for o in LLM(tiny).generate(PROMPTS, GREEDY)]


def assert_idle(llm: LLM) -> None:
    engine = llm.engine
    assert not engine.has_unfinished_requests() and not engine.requests
    assert engine.kv.num_free_blocks == engine.kv.num_blocks


# -- generate cleans up after itself ----------------------------------------------------------------

def test_a_step_that_fails_midway_aborts_the_calls_requests_and_the_next_call_works(tiny, reference):
    llm = LLM(tiny)
    runner, calls = llm.engine.runner, {"n": 0}
    execute = runner.execute

    def fail_on_third_step(batch, kv):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected failure")
        return execute(batch, kv)

    runner.execute = fail_on_third_step
    with pytest.raises(RuntimeError, match="injected failure"):
        llm.generate(PROMPTS, GREEDY)
    assert calls["n"] == 3
    assert_idle(llm)
    assert [o.token_ids for o in llm.generate(PROMPTS, GREEDY)] == reference


def test_nan_logits_raise_instead_of_giving_token_zero_and_the_engine_recovers(tiny, reference):
    llm = LLM(tiny)
    model, state = llm.engine.model, {"poison": True}
    compute_logits = model.compute_logits

    def poisoned(hidden):
        logits = compute_logits(hidden)
        if state["poison"]:
            logits[-1] = float("nan")
        return logits

    model.compute_logits = poisoned
    with pytest.raises(FloatingPointError, match=r"NaN logits for batch row\(s\) \[2\]"):
        llm.generate(PROMPTS, GREEDY)
    assert_idle(llm)
    state["poison"] = False
    assert [o.token_ids for o in llm.generate(PROMPTS, GREEDY)] == reference


def test_a_tiny_temperature_is_greedy_not_nan(tiny, reference):
    params = SamplingParams(temperature=1e-50, max_tokens=6, ignore_eos=True, seed=1)
    assert [o.token_ids for o in LLM(tiny).generate(PROMPTS, params)] == reference


@pytest.mark.parametrize("seed", [2**64, -1, 1.5])
def test_a_seed_outside_the_generator_range_is_refused_up_front(seed):
    with pytest.raises(ValueError, match=r"seed must be None or an integer in \[0, 2\*\*64\)"):
        SamplingParams(seed=seed)


def test_the_largest_seed_works(tiny):
    out = LLM(tiny).generate([[5, 9]], SamplingParams(max_tokens=3, seed=2**64 - 1))
    assert len(out[0].token_ids) == 3


def test_a_bad_request_in_a_batch_queues_nothing(tiny):
    llm = LLM(tiny)
    with pytest.raises(ValueError, match="out of range"):
        llm.generate([[5, 9], [5, 100000]], GREEDY)
    assert_idle(llm)


# -- requests and variables are checked where they come in ----------------------------------------------

@pytest.mark.parametrize("name, value, allowed", [
    ("MINI_PLATFORM_CPU_COMPILED", "2", ["1", "0"]),
    ("MINI_PLATFORM_NPU_MOE_ROUTING", "v3", ["v1", "v2"]),      # read only by the npu MoE kernels
    ("MINI_PLATFORM_TARGET_DEVICE", "tpu", ["cpu", "cuda"]),
    ("MINI_PLATFORM_KERNEL_BACKEND", "tpu", ["cpu", "npu", "triton"]),
])
def test_every_variable_is_checked_when_the_engine_is_built(tiny, monkeypatch, name, value, allowed):
    """Before, CPU_COMPILED=2 and NPU_MOE_ROUTING=v3 passed the constructor and failed in generate (or never,
    on a model or backend that does not read them)."""
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as caught:
        LLM(tiny, backend="cpu")
    message = str(caught.value)
    assert f"{name}={value!r}" in message and all(repr(a) in message or a in message for a in allowed), message


def test_every_variable_of_envs_has_a_check_or_is_free_form():
    names = {v for k, v in vars(envs).items() if k.isupper() and isinstance(v, str) and v.startswith("MINI_PLATFORM")}
    assert names == set(envs.VARIABLES)


def test_a_dict_as_sampling_params_is_named_as_a_dict(tiny):
    llm = LLM(tiny)
    with pytest.raises(ValueError, match=r"got dict .*SamplingParams\(\*\*your_dict\)"):
        llm.generate([[5, 9]], {"temperature": 0, "max_tokens": 2})
    with pytest.raises(ValueError, match="got str"):
        llm.generate([[5, 9]], "greedy")
    assert_idle(llm)


@pytest.mark.parametrize("prompt", [b"hello", bytearray(b"hi"), [b"hello"]])
def test_a_bytes_prompt_is_not_read_as_token_ids(tiny, prompt):
    llm = LLM(tiny)
    with pytest.raises(ValueError, match="decode it"):
        llm.generate(prompt, GREEDY)
    with pytest.raises(ValueError, match="decode it"):
        llm.engine.add_request(b"hello", GREEDY)
    assert_idle(llm)


@pytest.mark.parametrize("field, value, match", [("max_tokens", 0, "max_tokens"), ("top_p", 1.5, "top_p"),
                                                 ("temperature", -1.0, "temperature"),
                                                 ("stop_token_ids", "ab", "stop_token_ids")])
def test_sampling_params_changed_after_they_were_built_are_checked_again(tiny, field, value, match):
    params = SamplingParams(temperature=0, max_tokens=4)
    setattr(params, field, value)
    llm = LLM(tiny)
    with pytest.raises(ValueError, match=match):
        llm.generate([[5, 9]], params)
    with pytest.raises(ValueError, match=match):
        llm.engine.add_request([5, 9], params)
    assert_idle(llm)


def test_a_request_keeps_the_sampling_params_it_was_added_with(tiny, reference):
    params = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    llm = LLM(tiny)
    engine = llm.engine
    engine.add_request(PROMPTS[0], params, request_id="a")
    params.max_tokens = 1                      # the caller reuses its object for the next request
    engine.add_request(PROMPTS[0], params, request_id="b")
    outputs = {}
    while engine.has_unfinished_requests():
        outputs.update({o.request_id: o.token_ids for o in engine.step() if o.finished})
    assert outputs == {"a": reference[0], "b": reference[0][:1]}


# -- backends that cannot run here fail at construction ------------------------------------------------

def test_triton_on_the_cpu_without_the_interpreter_says_what_to_do(tiny, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        LLM(tiny, backend="triton", device="cpu")


def test_npu_without_torch_npu_says_what_to_do(tiny):
    import importlib.util
    if importlib.util.find_spec("torch_npu") is not None or "torch_npu" in sys.modules:
        pytest.skip("torch_npu (or its emulation) is importable here")
    with pytest.raises(ValueError, match="needs torch_npu.*emulated_torch_npu"):
        LLM(tiny, backend="npu")


def test_npu_refuses_a_second_model_with_another_rope_table(tiny, tmp_path, emulated_npu):
    other = make_tiny_checkpoint(tmp_path / "other", "llama", seed=3, rope_theta=500000.0)
    first = LLM(tiny, backend="npu", max_model_len=128)
    LLM(tiny, backend="npu", max_model_len=64)          # the same RoPE, shorter: a prefix of the first table
    LLM(make_tiny_checkpoint(tmp_path / "same", "qwen2", seed=5), backend="npu", max_model_len=100)  # same table
    with pytest.raises(ValueError, match="RoPE table .* differs"):
        LLM(other, backend="npu", max_model_len=128)
    with pytest.raises(ValueError, match="RoPE table .* differs"):
        LLM(tiny, backend="npu", max_model_len=256)     # longer than the table the op keeps
    assert first.generate([[5, 9]], GREEDY)[0].token_ids  # the first engine still runs


# -- files and devices ----------------------------------------------------------------------------------

def copy_checkpoint(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_a_damaged_safetensors_file_is_named(tiny, tmp_path, damage):
    path = copy_checkpoint(tiny, tmp_path / "ckpt")
    weights = path / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2] if damage == "truncated" else b"")
    with pytest.raises(ValueError, match=r"model\.safetensors is not a readable safetensors file.*download or save"):
        LLM(path)


@pytest.mark.parametrize("text, match", [("{\"vocab_size\": 12,", "is not valid JSON"),
                                         ("[1, 2]", "must hold a JSON object")])
def test_a_broken_config_json_is_named(tiny, tmp_path, text, match):
    path = copy_checkpoint(tiny, tmp_path / "ckpt")
    (path / "config.json").write_text(text)
    with pytest.raises(ValueError, match=rf"config\.json {match}"):
        LLM(path)


def test_a_broken_generation_config_is_named(tiny, tmp_path):
    path = copy_checkpoint(tiny, tmp_path / "ckpt")
    (path / "generation_config.json").write_text("eos_token_id: 2")
    with pytest.raises(ValueError, match=r"generation_config\.json is not valid JSON"):
        LLM(path)


@pytest.mark.parametrize("device, match", [("gpu", "is not a torch device"), (42.0, "is not a torch device"),
                                           ("cuda:7", "give one that exists, or device='cpu'")])
def test_a_bad_device_is_explained(tiny, device, match):
    if device == "cuda:7" and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    with pytest.raises(ValueError, match=match):
        LLM(tiny, device=device)


# -- the command line: one line, exit status 2 ------------------------------------------------------------

def cli_error(capsys, args: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        generate_main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 or err[0].startswith("usage:"), err
    return err[-1]


def test_cli_names_a_damaged_checkpoint_in_one_line(tiny, tmp_path, capsys):
    path = copy_checkpoint(tiny, tmp_path / "ckpt")
    (path / "model.safetensors").write_bytes(b"")
    line = cli_error(capsys, ["--model", str(path), "--prompt-ids", "1,2"])
    assert "model.safetensors" in line and "not a readable safetensors file" in line
    (path / "config.json").write_text("[]")
    assert "must hold a JSON object" in cli_error(capsys, ["--model", str(path), "--prompt-ids", "1,2"])


def test_cli_explains_a_bad_device_and_a_bad_backend_variable(tiny, capsys, monkeypatch):
    assert "not a torch device" in cli_error(capsys, ["--model", str(tiny), "--prompt-ids", "1", "--device", "gpu"])
    monkeypatch.setenv("MINI_PLATFORM_KERNEL_BACKEND", "tpu")
    assert "unknown kernel backend 'tpu'" in cli_error(capsys, ["--model", str(tiny), "--prompt-ids", "1"])


@pytest.mark.parametrize("ids", ["1,,2", "1,2,", ","])
def test_cli_refuses_empty_prompt_id_items(tiny, capsys, ids):
    assert "comma-separated integers" in cli_error(capsys, ["--model", str(tiny), "--prompt-ids", ids])


# -- sizes -----------------------------------------------------------------------------------------------

def test_the_rope_table_is_sized_by_max_model_len(tmp_path):
    path = make_tiny_checkpoint(tmp_path / "long", "llama", max_position_embeddings=1 << 20)
    llm = LLM(path, max_model_len=256, num_kv_blocks=64)
    assert llm.engine.model.model.rotary_emb.cos_sin_cache.shape == (256, 16)


def test_num_kv_blocks_overrides_the_count_and_the_stats_give_the_bytes(tiny):
    """The plan's block bytes times the blocks: what the runner really allocated (K and V of every layer)."""
    for options in ({}, {"num_kv_blocks": 7}):
        engine = LLM(tiny, max_model_len=64, **options).engine
        allocated = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in engine.runner.kv_caches)
        assert engine.stats()["kv_cache_bytes_per_rank"] == allocated
    assert engine.stats()["num_blocks"] == 7


@pytest.mark.skipif(not Path("/proc/self/statm").is_file(), reason="reads the resident size from /proc")
def test_the_default_kv_cache_takes_memory_only_for_what_requests_write(tmp_path):
    """A 1M-context tiny model gets the default 1 GiB cache; only the pages requests write are resident."""
    def resident_mib() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20

    path = make_tiny_checkpoint(tmp_path / "long", "llama", max_position_embeddings=1 << 20)
    before = resident_mib()
    llm = LLM(path, max_model_len=1 << 16)
    kv = llm.engine.runner.kv_caches
    cache_mib = sum(k.numel() * k.element_size() * 2 for k, _ in kv) >> 20
    assert cache_mib >= 512                      # the default really is large for this model ...
    llm.generate([[5, 9, 13]], GREEDY)
    assert resident_mib() - before < 128         # ... but it is not zero-filled up front


# -- smaller config and option mistakes ---------------------------------------------------------------------

@pytest.mark.parametrize("option", ["enable_prefix_caching", "enable_chunked_prefill"])
def test_boolean_options_must_be_booleans(tiny, option):
    with pytest.raises(ValueError, match=f"{option} must be True or False, got 'no'"):
        LLM(tiny, **{option: "no"})


def test_an_unknown_target_device_is_an_error():
    """The engine refuses a target it does not understand; the resolution rules themselves (exercise 180's
    contract, vLLM's) only ask whether the target is the CPU."""
    from mini_platform import platforms
    with pytest.raises(ValueError, match="MINI_PLATFORM_TARGET_DEVICE='tpu' is not understood"):
        platforms.resolve_current_platform_cls_qualname({"MINI_PLATFORM_TARGET_DEVICE": "tpu"})
    assert envs.target_device({"MINI_PLATFORM_TARGET_DEVICE": " CPU "}) == "cpu"
    assert envs.target_device({"MINI_PLATFORM_TARGET_DEVICE": "tpu"}) == "tpu"
    assert envs.target_device({}) is None


@pytest.mark.parametrize("field, value, match", [
    ("rope_theta", 0, "rope_theta must be a positive number, got 0"),
    ("rope_theta", -5.0, "rope_theta must be a positive number"),
    ("eos_token_id", "2", "eos_token_id must be an integer or a list of integers, got '2'"),
    ("eos_token_id", [2, "3"], "eos_token_id must be an integer or a list of integers"),
])
def test_config_values_that_would_be_silently_wrong_are_refused(field, value, match):
    from mini_platform.model.tiny import tiny_config
    with pytest.raises(ValueError, match=match):
        ModelConfig.from_dict(tiny_config("llama", **{field: value}))


def test_rope_theta_inside_rope_parameters_may_not_be_zero_either():
    from mini_platform.model.tiny import tiny_config
    cfg = tiny_config("llama", rope_parameters={"rope_type": "default", "rope_theta": 0})
    with pytest.raises(ValueError, match="rope_theta must be a positive number, got 0"):
        ModelConfig.from_dict(cfg)
    assert ModelConfig.from_dict(tiny_config("llama", rope_theta=None)).rope_theta == 10000.0
    assert json.dumps(cfg)  # the config stays a plain JSON object
