"""Stage 263: the engine serves a tiny Llama on the Lumen platform, token for token equal to transformers."""
import importlib
import sys
import uuid

import pytest
import torch

import submission
from capstone import harness
from mini_platform import LLM, SamplingParams, ops, platforms
from mini_platform.model.paged_attention import AttentionMetadata, allocate_kv_caches

PROMPTS = [[1, 17, 42, 99, 7], [1, 5], list(range(3, 43))]  # the last is longer than a 32-token block
GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)


@pytest.fixture(scope="module")
def checkpoint():
    """A tiny random Llama and transformers' greedy output for PROMPTS (the reference)."""
    return harness.tiny_llama(tuple(map(tuple, PROMPTS)), GREEDY.max_tokens)


@pytest.fixture(scope="module")
def lumen():
    harness.activate(harness.install(submission.PROJECT))
    with harness.lumen_selected("lumen0"):
        yield


def generate(checkpoint, **options):
    path, _ = checkpoint
    llm = LLM(path, block_size=options.pop("block_size", 32), num_kv_blocks=16, **options)
    return llm, [out.token_ids for out in llm.generate(PROMPTS, GREEDY)]


def test_example_serves_a_tiny_llama_like_transformers(lumen, checkpoint):
    llm, tokens = generate(checkpoint, enforce_eager=True)
    assert type(platforms.current_platform).__name__ == "LumenPlatform"
    assert ops.current_backend() == "lumen"
    assert type(llm.engine.runner.attention).__module__ == "lumen_npu.attention"
    assert tokens == checkpoint[1]


def test_chunked_prefills_and_decodes_in_one_batch(lumen, checkpoint):
    _, tokens = generate(checkpoint, enforce_eager=True, max_num_batched_tokens=16, block_size=64)
    assert tokens == checkpoint[1]


def test_decode_graphs_replay_like_transformers(lumen, checkpoint):
    llm, tokens = generate(checkpoint, enforce_eager=False, cudagraph_capture_sizes=[1, 2, 4])
    assert llm.engine.stats()["num_graph_steps"] > 0, "no decode step replayed a graph"
    assert tokens == checkpoint[1]


def test_an_unsupported_block_size_is_refused_before_loading(lumen, checkpoint):
    with pytest.raises(ValueError, match="block_size=16"):
        LLM(checkpoint[0], block_size=16)


SPY = """
from mini_platform.ops.cpu import attention as cpu
CALLS = []


def reshape_and_cache(*args):
    CALLS.append("reshape_and_cache")
    return cpu.reshape_and_cache(*args)


def paged_attention(*args):
    CALLS.append("paged_attention")
    return cpu.paged_attention(*args)


def paged_decode_attention(*args):
    CALLS.append("paged_decode_attention")
    return cpu.paged_decode_attention(*args)
"""


def test_attention_uses_its_backend_and_the_decode_kernel_for_decodes(lumen, tmp_path):
    spy = f"spy_{uuid.uuid4().hex[:12]}"  # a fresh backend, whatever ran before in this process
    (tmp_path / spy).mkdir()
    (tmp_path / spy / "__init__.py").write_text("")
    (tmp_path / spy / "attention.py").write_text(SPY)
    sys.path.insert(0, str(tmp_path))
    ops.register_backend(spy, spy)
    from lumen_npu.attention import LumenAttention
    CALLS = importlib.import_module(f"{spy}.attention").CALLS

    g = torch.Generator().manual_seed(7)
    caches = allocate_kv_caches(2, 4, 32, 2, 16, torch.float32)
    for cache in caches:  # the engine allocates them uninitialised; zeros show which layer was written
        for tensor in cache:
            tensor.zero_()
    attention = LumenAttention(caches, backend=spy)
    i32 = lambda values: torch.tensor(values, dtype=torch.int32)  # noqa: E731
    # In layer 1: a prompt of 3 tokens; one decode step of the same request; then a decode step of that request
    # and a new one-token prompt followed by a padding row (slot -1): max_query_len 1, but 3 rows for 2 requests.
    steps = [
        ("a prompt of 3 tokens", AttentionMetadata(i32([32, 33, 34]), i32([[1, 0]]), i32([0, 3]), i32([3]), 3),
         ["reshape_and_cache", "paged_attention"]),
        ("a decode step of 1 request", AttentionMetadata(i32([35]), i32([[1, 0]]), i32([0, 1]), i32([4]), 1),
         ["reshape_and_cache", "paged_decode_attention"]),
        ("max_query_len 1 with a padding row: 3 rows for 2 requests",
         AttentionMetadata(i32([36, 64, -1]), i32([[1, 0], [2, 0]]), i32([0, 1, 2]), i32([5, 1]), 1),
         ["reshape_and_cache", "paged_attention"]),
    ]
    for what, md, expected in steps:
        CALLS.clear()
        n = md.slot_mapping.shape[0]
        attention.metadata = md
        q, k, v = torch.randn(n, 4, 16, generator=g), torch.randn(n, 2, 16, generator=g), torch.randn(n, 2, 16, generator=g)
        try:
            out = attention(1, q, k, v)
        except ValueError as exc:  # a kernel refused its arguments: say which kernels were called
            raise AssertionError(f"{what}: a kernel raised ValueError: {exc}; kernels called {CALLS}, "
                                 f"expected {expected}") from exc
        assert CALLS == expected, f"{what}: the kernels called on backend=self.backend, in order"
        assert out.shape == (n, 4, 16), f"{what}: output shape"
    assert caches[1][0].abs().sum() > 0 and caches[0][0].abs().sum() == 0, \
        "attention(1, ...) must write layer 1's caches (kv_caches[1]) and leave layer 0's untouched"
