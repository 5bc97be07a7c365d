"""The whole engine against Hugging Face transformers: greedy outputs equal token for token.

Checkpoints are tiny random Llama / Qwen2 models (grouped-query attention) built with transformers
itself in temporary directories. Triton runs in the Triton interpreter on the CPU; the npu backend
runs against the emulation of torch_npu semantics (not Ascend hardware).
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch

from mini_platform import LLM, LLMEngine, SamplingParams, envs
from mini_platform.ops.cpu import compiled

GREEDY = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)


def build_checkpoint(path: Path, arch: str) -> Path:
    import transformers as tf
    config_cls, model_cls = {"llama": (tf.LlamaConfig, tf.LlamaForCausalLM),
                             "qwen2": (tf.Qwen2Config, tf.Qwen2ForCausalLM)}[arch]
    torch.manual_seed({"llama": 0, "qwen2": 1}[arch])
    config = config_cls(vocab_size=211, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                        initializer_range=0.1, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    model_cls(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matmuls gain nothing from threads, and on a busy machine OpenMP threads waiting on each other
    make them many times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ckpt")
    return {arch: build_checkpoint(root / arch, arch) for arch in ("llama", "qwen2")}


@pytest.fixture(scope="module")
def hf_greedy(checkpoints):
    """``hf_greedy(arch, prompt, max_new_tokens, eos=None)``: transformers' greedy generate, memoized."""
    import transformers as tf
    models, memo = {}, {}

    def generate(arch: str, prompt: list[int], max_new_tokens: int = 8, eos: int | None = None) -> list[int]:
        key = (arch, tuple(prompt), max_new_tokens, eos)
        if key not in memo:
            if arch not in models:
                models[arch] = tf.AutoModelForCausalLM.from_pretrained(
                    checkpoints[arch], attn_implementation="eager").eval()
                models[arch].generation_config.eos_token_id = None   # else it fills in the config's EOS
            gen = tf.GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=eos,
                                      pad_token_id=0)
            with torch.no_grad():
                out = models[arch].generate(torch.tensor([prompt]), generation_config=gen)
            memo[key] = out[0, len(prompt):].tolist()
        return memo[key]
    return generate


def prompts(seed: int, lengths: list[int], prefix: list[int] = ()) -> list[list[int]]:
    rng = random.Random(seed)
    return [list(prefix) + [rng.randrange(3, 211) for _ in range(n)] for n in lengths]


def assert_matches_hf(outputs, batch, arch, hf_greedy, max_tokens=8):
    assert [o.prompt_token_ids for o in outputs] == batch
    for out, prompt in zip(outputs, batch):
        assert out.finished and out.finish_reason == "length"
        assert out.token_ids == hf_greedy(arch, prompt, max_tokens), f"prompt of {len(prompt)} tokens"


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_mixed_prompt_lengths_match_transformers(arch, checkpoints, hf_greedy):
    batch = prompts(0, [1, 5, 16, 17, 40, 3])
    llm = LLM(checkpoints[arch], block_size=4)
    assert_matches_hf(llm.generate(batch, GREEDY), batch, arch, hf_greedy)
    assert llm.engine.stats()["num_preemptions"] == 0
    assert llm.engine.kv.num_free_blocks == llm.engine.kv.num_blocks   # everything freed


def test_preemption_under_a_tiny_kv_cache_matches_transformers(checkpoints, hf_greedy):
    batch = prompts(1, [9, 14, 6, 11, 7])
    llm = LLM(checkpoints["qwen2"], block_size=4, num_kv_blocks=10, enable_prefix_caching=False)
    assert_matches_hf(llm.generate(batch, GREEDY), batch, "qwen2", hf_greedy)
    assert llm.engine.stats()["num_preemptions"] > 0


def test_shared_prefixes_hit_the_cache_and_match_transformers(checkpoints, hf_greedy):
    prefix = prompts(2, [21])[0]
    batch = prompts(3, [3, 7, 1, 12], prefix=prefix)
    llm = LLM(checkpoints["llama"], block_size=4, max_num_seqs=2)
    outputs = llm.generate(batch, GREEDY)
    assert_matches_hf(outputs, batch, "llama", hf_greedy)
    # The first two run together (their shared blocks are computed twice); the last two reuse them.
    assert [o.num_cached_tokens for o in outputs] == [0, 0, 20, 20]
    # A later request reuses blocks of a finished one, including blocks that hold generated tokens.
    follow_up = batch[0] + outputs[0].token_ids[:4]     # 28 tokens: 6 full blocks could hit, the 7th never
    again = llm.generate([follow_up], GREEDY)
    assert again[0].num_cached_tokens == 24
    assert_matches_hf(again, [follow_up], "llama", hf_greedy)


def test_preemption_with_prefix_caching_recovers_blocks(checkpoints, hf_greedy):
    batch = prompts(4, [10, 13, 8, 15], prefix=prompts(5, [8])[0])
    llm = LLM(checkpoints["llama"], block_size=4, num_kv_blocks=12)
    assert_matches_hf(llm.generate(batch, GREEDY), batch, "llama", hf_greedy)
    stats = llm.engine.stats()
    assert stats["num_preemptions"] > 0 and stats["num_prefix_hit_tokens"] > 0


@pytest.mark.parametrize("chunked, budget", [(True, 8), (True, 5), (False, 48)])
def test_token_budget_and_chunked_prefill_match_transformers(chunked, budget, checkpoints, hf_greedy):
    batch = prompts(6, [30, 4, 19, 2])
    llm = LLM(checkpoints["qwen2"], block_size=8, max_num_batched_tokens=budget, enable_chunked_prefill=chunked)
    seen = []
    scheduler = llm.engine.scheduler
    schedule = scheduler.schedule
    scheduler.schedule = lambda: seen.append(schedule()) or seen[-1]
    assert_matches_hf(llm.generate(batch, GREEDY), batch, "qwen2", hf_greedy)
    assert max(out.num_tokens for out in seen) <= budget
    split = any(not s.samples and s.start == 0 for out in seen for s in out.scheduled)
    assert split == chunked


def test_stop_tokens_and_config_eos_match_transformers(checkpoints, hf_greedy, tmp_path):
    batch = prompts(7, [6, 12])
    free_run = hf_greedy("llama", batch[0], 8)
    stop = free_run[3]                                       # a token greedy decoding reaches
    llm = LLM(checkpoints["llama"], block_size=4)
    out = llm.generate(batch, SamplingParams(temperature=0, max_tokens=8, stop_token_ids=[stop]))
    for o, p in zip(out, batch):
        assert o.token_ids == hf_greedy("llama", p, 8, eos=stop)
    assert out[0].finish_reason == "stop" and out[0].token_ids[-1] == stop and len(out[0].token_ids) <= 4
    # The same token as the checkpoint's EOS: stops by default, not with ignore_eos.
    ckpt = Path(shutil.copytree(checkpoints["llama"], tmp_path / "eos"))
    for name in ("config.json", "generation_config.json"):
        cfg = json.loads((ckpt / name).read_text())
        cfg["eos_token_id"] = stop
        (ckpt / name).write_text(json.dumps(cfg))
    llm = LLM(ckpt, block_size=4)
    assert llm.generate(batch[0], SamplingParams(temperature=0, max_tokens=8))[0].token_ids == out[0].token_ids
    assert llm.generate(batch[0], GREEDY)[0].token_ids == free_run


def test_triton_backend_interpreted_matches_transformers(checkpoints, hf_greedy):
    batch = prompts(8, [5, 18])
    llm = LLM(checkpoints["llama"], block_size=16, backend="triton", max_num_batched_tokens=16)
    params = SamplingParams(temperature=0, max_tokens=3, ignore_eos=True)
    assert_matches_hf(llm.generate(batch, params), batch, "llama", hf_greedy, max_tokens=3)


def test_npu_backend_emulated_matches_transformers(checkpoints, hf_greedy, emulated_npu, monkeypatch):
    from mini_platform import ops
    used, get_kernel = set(), ops.get_kernel
    monkeypatch.setattr(ops, "get_kernel", lambda k, b=None: used.add((k, ops.current_backend(b))) or get_kernel(k, b))
    batch = prompts(9, [7, 20])
    llm = LLM(checkpoints["qwen2"], block_size=16, backend="npu", max_num_batched_tokens=16)
    params = SamplingParams(temperature=0, max_tokens=4, ignore_eos=True)
    assert_matches_hf(llm.generate(batch, params), batch, "qwen2", hf_greedy, max_tokens=4)
    # backend= serves every kernel of the forward, not only attention.
    assert {b for _, b in used} == {"npu"}
    assert {k for k, _ in used} >= {"rms_norm", "fused_add_rms_norm", "rotary_embedding", "silu_and_mul",
                                    "reshape_and_cache", "paged_attention", "paged_decode_attention"}


def test_seeded_sampling_is_independent_of_the_batch(checkpoints):
    llm = LLM(checkpoints["llama"], block_size=4)
    mine = SamplingParams(temperature=0.8, top_p=0.95, max_tokens=6, seed=123, ignore_eos=True)
    others = SamplingParams(temperature=1.0, max_tokens=3, ignore_eos=True)
    prompt = prompts(10, [9])[0]
    alone = llm.generate([prompt], mine)[0].token_ids
    crowd = llm.generate(prompts(11, [4, 13]) + [prompt] + prompts(12, [20]), [others, others, mine, others])
    assert crowd[2].token_ids == alone
    assert llm.generate([prompt], SamplingParams(temperature=0.8, top_p=0.95, max_tokens=6, seed=124,
                                                 ignore_eos=True))[0].token_ids != alone


def test_decoding_up_to_the_context_limit_finishes_with_length(checkpoints, hf_greedy):
    llm = LLM(checkpoints["llama"], block_size=4, max_model_len=12)
    batch = prompts(15, [9, 12, 11])
    outputs = llm.generate(batch, SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))
    assert [len(o.token_ids) for o in outputs] == [3, 1, 1]      # prompt + outputs reach 12 tokens
    assert all(o.finish_reason == "length" for o in outputs)
    for out, prompt in zip(outputs, batch):
        assert out.token_ids == hf_greedy("llama", prompt, 8)[:len(out.token_ids)]


def test_streaming_steps_and_abort(checkpoints):
    engine = LLMEngine(checkpoints["llama"], block_size=4)
    a = engine.add_request(prompts(13, [6])[0], SamplingParams(temperature=0, max_tokens=5, ignore_eos=True))
    b = engine.add_request(prompts(14, [9])[0], SamplingParams(temperature=0, max_tokens=50, ignore_eos=True),
                           request_id="long")
    assert b == "long"
    lengths = []
    while engine.has_unfinished_requests():
        outs = {o.request_id: o for o in engine.step()}
        lengths.append(len(outs[b].token_ids))
        if a in outs and outs[a].finished:
            assert outs[a].finish_reason == "length" and len(outs[a].token_ids) == 5
            aborted = engine.abort(b)
            assert aborted.finished and aborted.finish_reason == "abort" and len(aborted.token_ids) == 5
    assert lengths == [1, 2, 3, 4, 5] and engine.abort(b) is None
    assert engine.kv.num_free_blocks == engine.kv.num_blocks
    engine.add_request([5], request_id="x")
    with pytest.raises(ValueError, match="already in use"):
        engine.add_request([6], request_id="x")


def test_a_forward_reads_each_switch_once_and_the_next_step_sees_a_change(checkpoints, monkeypatch):
    # Every kernel call of a forward asks whether the compiled CPU kernels may run; the model runner reads that
    # switch once per forward (envs.read_once), and a change made between steps holds from the next step.
    reads, read = [], envs.cpu_compiled.__wrapped__   # the reader itself, under its read_once wrapper

    def counting(env=None):
        reads.append(env)
        return read(env)
    monkeypatch.setattr(envs, "cpu_compiled", envs._once(counting))
    monkeypatch.setenv(envs.CPU_COMPILED, "1")
    engine = LLMEngine(checkpoints["llama"], block_size=4)
    engine.add_request(prompts(15, [6])[0], SamplingParams(temperature=0, max_tokens=3, ignore_eos=True))
    engine.step()
    reads.clear()
    engine.step()   # a decode step: one forward, then the LM head
    assert 1 <= len(reads) <= 2, f"{len(reads)} reads of {envs.CPU_COMPILED} in one decode step"
    monkeypatch.setattr(compiled, "paged_decode_attention", lambda *a: pytest.fail("the compiled attention ran"))
    monkeypatch.setenv(envs.CPU_COMPILED, "0")
    engine.step()   # the torch decode attention runs: the compiled one is never called
    assert not engine.has_unfinished_requests()


def test_bad_input_is_rejected_before_any_work(checkpoints, monkeypatch):
    llm = LLM(checkpoints["llama"], block_size=4, num_kv_blocks=8, max_num_batched_tokens=16,
              enable_chunked_prefill=False)
    engine = llm.engine
    cases = [
        ([[5] * 129], None, "max_model_len"),
        ([[]], None, "empty"),
        ([[5, 211]], None, "out of range"),
        ([[5] * 40], SamplingParams(max_tokens=1), "KV blocks"),
        ([[5] * 20], SamplingParams(max_tokens=1), "chunked prefill"),
        (["hello"], None, "tokenizer"),
        ([[5], [6]], [SamplingParams()], "one per prompt"),
        ([[5.0]], None, "token ids"),
        ([5, 6.0], None, r"token ids, got \[5, 6.0\]"),   # one prompt with a float in it
    ]
    for batch, params, message in cases:
        with pytest.raises(ValueError, match=message):   # a good prompt first: nothing may run either
            llm.generate([[7, 8]] + batch if len(batch) == 1 else batch, params or SamplingParams(max_tokens=2))
        assert not engine.has_unfinished_requests() and not engine.requests   # nothing was queued
    with pytest.raises(ValueError, match="top_p"):
        llm.generate([[5]], SamplingParams(top_p=2))
    with pytest.raises(ValueError, match="block_size"):
        LLM(checkpoints["llama"], block_size=0)
    with pytest.raises(ValueError, match="unknown kernel backend"):
        LLM(checkpoints["llama"], backend="tpu")
    with pytest.raises(ValueError, match="dtype"):
        LLM(checkpoints["llama"], dtype="int8")
    with pytest.raises(ValueError, match="config.json"):
        LLM(checkpoints["llama"].parent)
    from mini_platform.ascend.platform import NPUPlatform
    # The npu kernels' block-size rule holds when they are chosen explicitly on another platform too.
    with pytest.raises(ValueError, match="block_size=8 is not supported by the 'npu' kernel backend"):
        LLM(checkpoints["llama"], block_size=8, backend="npu")
    LLM(checkpoints["llama"], block_size=8, backend="triton")   # Triton's kernels take any block size
    from mini_platform import platforms
    monkeypatch.setattr(platforms, "_current", platforms.LazyPlatform(NPUPlatform))   # the Ascend platform, resolved
    with pytest.raises(ValueError, match="block_size=4 is not supported"):
        LLM(checkpoints["llama"], block_size=4)


def test_text_prompts_with_a_tokenizer(checkpoints, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(3, 211)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    ckpt = Path(shutil.copytree(checkpoints["llama"], tmp_path / "tok"))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>") \
        .save_pretrained(ckpt)
    llm = LLM(ckpt, block_size=4)
    out = llm.generate(["w5 w17 w40", [5, 17, 40]], GREEDY)
    assert out[0].prompt_token_ids == [5, 17, 40] and out[0].token_ids == out[1].token_ids
    single = llm.generate("w5 w17 w40", GREEDY)       # one string is one prompt, not a list of characters
    assert len(single) == 1 and single[0].token_ids == out[0].token_ids
    assert out[0].text == " ".join(words[t] for t in out[0].token_ids)
