"""The accounting of benchmarks/decode_floor.py: the floor counts the bytes a decode step reads, and the "matmuls
alone" pass runs every weight matmul of the step once; checked on a tiny Qwen2 model with tied embeddings."""
from __future__ import annotations

import pytest
import torch

from benchmarks import decode_floor
from mini_platform.model import tiny
from mini_platform.model.config import ModelConfig
from mini_platform.model.llama import CausalLM

SIZES = {"vocab_size": 320, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "tie_word_embeddings": True}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_floor_counts_the_weights_the_step_multiplies_and_the_norms(dtype):
    model = CausalLM(ModelConfig.from_dict(tiny.tiny_config("qwen2", **SIZES)), dtype=dtype)
    matmuls = decode_floor.step_matmuls(model)
    # every linear layer's weight once, the tied embedding once, as the LM head (it is the last matmul of a step)
    assert matmuls[-1][0] is model.model.embed_tokens.weight and len(matmuls) == 4 * SIZES["num_hidden_layers"] + 1
    read = sum(t.numel() * t.element_size() for pair in matmuls for t in pair if t is not None)
    norms = sum(p.numel() * p.element_size() for name, p in model.named_parameters() if name.endswith("norm.weight"))
    assert read + norms == decode_floor.weight_bytes(SIZES, dtype)
    assert decode_floor.matmuls_timer(model, batch=2)() > 0
    # reading alone reads the same bytes as the matmuls, each weight and bias once, in place (no copy)
    views = decode_floor.read_views(model)
    assert sum(v.numel() * v.element_size() for v in views) == read and all(v.dtype == torch.float32 for v in views)
    assert {v.data_ptr() for v in views} == {t.data_ptr() for pair in matmuls for t in pair if t is not None}
    assert decode_floor.reads_timer(model)() > 0
    assert decode_floor.Triad(gib=1 / 1024)() > 0


def test_transformers_steps_are_timed_one_by_one_with_the_probe_outside(monkeypatch):
    """hf_step times each decode step through a streamer (the protocol of transformers' generate), leaving out the
    prompt, the prefill and the bandwidth probe run at each push. With a clock that reads i**2 at its i-th reading
    (two readings per push, around the probe), the prompt, the prefill's token and three steps are pushed at
    (0, 1), (4, 9), (16, 25), (36, 49), (64, 81): the steps take 16 - 9, 36 - 25 and 64 - 49, each paired with the
    probe run when it ended (the 3rd, 4th and 5th)."""
    import types

    import transformers

    config = transformers.Qwen2Config(**tiny.tiny_config("qwen2", **SIZES))
    model = transformers.Qwen2ForCausalLM(config).eval()
    model.generation_config.eos_token_id = None
    seconds, rates = decode_floor.hf_step(model, [[5, 6, 7], [8, 9]], steps=3, probe=lambda: 1.0)
    assert len(seconds) == 3 and min(seconds) > 0 and rates == [1.0] * 3
    readings, probes = iter(range(100)), iter(range(1, 100))
    monkeypatch.setattr(decode_floor, "time", types.SimpleNamespace(perf_counter=lambda: next(readings) ** 2))
    real_generate = model.generate

    def generate(*args, **kwargs):   # the warm-up (2 tokens: 3 pushes) is not timed: restart both after it
        nonlocal readings, probes
        out = real_generate(*args, **kwargs)
        if kwargs["generation_config"].max_new_tokens == 2:
            readings, probes = iter(range(100)), iter(range(1, 100))
        return out
    monkeypatch.setattr(model, "generate", generate)
    assert decode_floor.hf_step(model, [[5, 6, 7], [8, 9]], steps=3, probe=lambda: next(probes)) == ([7, 11, 15],
                                                                                                      [3, 4, 5])


def test_each_step_is_compared_with_the_bandwidth_measured_after_it():
    # floors 120/10, 120/6, 120/4 = 12, 20, 30; over steps of 2, 4, 3 that is 6, 5, 10: median 6
    assert decode_floor.of_floor(120, [2, 4, 3], [10, 6, 4]) == 6
    with pytest.raises(ValueError):   # a step without its probe is a bug of the caller, not a shorter median
        decode_floor.of_floor(120, [2, 4, 3], [10, 6])
