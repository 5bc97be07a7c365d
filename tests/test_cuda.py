"""The Triton backend compiled for an NVIDIA GPU, checked against the CPU reference.

Run on an NVIDIA machine with ``MINI_PLATFORM_TRITON_GPU=1 python -m pytest -m cuda`` (without that
variable tests/conftest.py turns the Triton interpreter on, and these tests skip). Everywhere else the
same kernels are tested in the Triton interpreter by test_ops_kernels.py and test_attention.py.
"""
from __future__ import annotations

import os

import pytest
import torch

from mini_platform import LLM, SamplingParams, ops
from mini_platform.model import make_tiny_checkpoint
from test_attention import HEAD_DIM, HEADS, SCENARIOS, make_batch
from test_ops_kernels import COS_SIN, EPS, rand

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1",
                       reason="needs an NVIDIA GPU and MINI_PLATFORM_TRITON_GPU=1 (Triton compiled, not interpreted)"),
]

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def on_gpu(kernel, *args):
    """Run ``kernel`` with the Triton backend on CUDA copies of ``args``; results come back to the CPU."""
    out = kernel(*[a.cuda() if isinstance(a, torch.Tensor) else a for a in args], backend="triton")
    return tuple(o.cpu() for o in out) if isinstance(out, tuple) else out.cpu()


def assert_close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.float(), want.float(), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_norm_activation_rotary_kernels_on_gpu(dtype):
    x, r, w = rand(9, 1000, dtype=dtype, seed=1), rand(9, 1000, dtype=dtype, seed=2), rand(1000, dtype=dtype, seed=3)
    assert_close(on_gpu(ops.rms_norm, x, w, EPS), ops.rms_norm(x, w, EPS, backend="cpu"), dtype)
    for got, want in zip(on_gpu(ops.fused_add_rms_norm, x, r, w, EPS),
                         ops.fused_add_rms_norm(x, r, w, EPS, backend="cpu")):
        assert_close(got, want, dtype)
    gate_up = rand(9, 2 * 1030, dtype=dtype, seed=4)
    assert_close(on_gpu(ops.silu_and_mul, gate_up), ops.silu_and_mul(gate_up, backend="cpu"), dtype)
    positions = torch.randint(0, COS_SIN.shape[0], (7,), generator=torch.Generator().manual_seed(5))
    q, k = rand(7, 4 * 16, dtype=dtype, seed=6), rand(7, 2 * 16, dtype=dtype, seed=7)
    for is_neox in (True, False):
        got = on_gpu(ops.rotary_embedding, positions, q, k, 16, COS_SIN, is_neox)
        want = ops.rotary_embedding(positions, q, k, 16, COS_SIN, is_neox, backend="cpu")
        for g, w_ in zip(got, want):
            assert_close(g, w_, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("block_size", [16, 128])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_paged_attention_on_gpu(scenario, block_size, dtype):
    batch = make_batch(SCENARIOS[scenario], *HEADS["GQA"], block_size, dtype, seed=11)
    query, key_cache, value_cache, block_tables, query_start_loc, seq_lens = batch
    scale = HEAD_DIM ** -0.5
    want = ops.paged_attention(*batch, scale, backend="cpu")
    assert_close(on_gpu(ops.paged_attention, *batch, scale), want, dtype)
    if scenario == "decode_ragged":
        got = on_gpu(ops.paged_decode_attention, query, key_cache, value_cache, block_tables, seq_lens, scale)
        assert_close(got, want, dtype)


def test_reshape_and_cache_on_gpu():
    gen = torch.Generator().manual_seed(12)
    key, value = torch.randn(10, 2, HEAD_DIM, generator=gen), torch.randn(10, 2, HEAD_DIM, generator=gen)
    slots = torch.tensor([3, -1, 40, 17, 0, -1, 63, 16, 5, 33], dtype=torch.int32)
    caches = [torch.zeros(4, 16, 2, HEAD_DIM) for _ in range(2)]
    ops.reshape_and_cache(key, value, *caches, slots, backend="cpu")
    gpu_caches = [torch.zeros(4, 16, 2, HEAD_DIM, device="cuda") for _ in range(2)]
    ops.reshape_and_cache(key.cuda(), value.cuda(), *gpu_caches, slots.cuda(), backend="triton")
    for got, want in zip(gpu_caches, caches):
        assert torch.equal(got.cpu(), want)


def test_engine_greedy_tokens_on_gpu_equal_the_cpu_engine(tmp_path):
    model = make_tiny_checkpoint(tmp_path / "tiny", arch="llama", seed=3)
    prompts = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [9, 8, 7], [5] * 20]
    params = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    want = [o.token_ids for o in LLM(model=str(model), backend="cpu", device="cpu").generate(prompts, params)]
    got = [o.token_ids for o in LLM(model=str(model), backend="triton", device="cuda").generate(prompts, params)]
    assert got == want


# -- MoE: the Triton grouped GEMM compiled for the GPU (bf16/fp16 on tensor cores, fp32 in full precision) --
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("tokens, num_experts, top_k", [(1, 8, 2), (37, 8, 2), (300, 16, 4), (64, 60, 4)])
def test_moe_kernels_on_gpu(dtype, tokens, num_experts, top_k):
    from mini_platform.model import expert_map_for_rank

    gen = torch.Generator().manual_seed(21)
    hidden = (torch.randn(tokens, 256, generator=gen)).to(dtype)
    w13 = (torch.randn(num_experts, 2 * 192, 256, generator=gen) / 16).to(dtype)
    w2 = (torch.randn(num_experts, 256, 192, generator=gen) / 14).to(dtype)
    logits = torch.randn(tokens, num_experts, generator=gen) - 0.2 * torch.arange(num_experts)  # uneven loads
    weights, ids = ops.moe_topk_softmax(logits, top_k, True, backend="cpu")
    got_w, got_ids = on_gpu(ops.moe_topk_softmax, logits, top_k, True)
    assert torch.equal(got_ids, ids)
    torch.testing.assert_close(got_w, weights, atol=1e-6, rtol=1e-6)
    want = ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu")
    tol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}[dtype]
    got = on_gpu(ops.fused_experts, hidden, w13, w2, weights, ids)
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)
    total = torch.zeros_like(want, dtype=torch.float32)
    for rank in range(2):
        expert_map = expert_map_for_rank(num_experts, 2, rank, "round_robin")
        owned = [g for g in range(num_experts) if expert_map[g] >= 0]
        total += on_gpu(ops.fused_experts, hidden, w13[owned], w2[owned], weights, ids, expert_map).float()
    torch.testing.assert_close(total, want.float(), atol=2 * tol, rtol=2 * tol)


@pytest.mark.parametrize("arch", ["mixtral", "qwen2_moe"])
def test_moe_engine_greedy_tokens_on_gpu_equal_the_cpu_engine(tmp_path, arch):
    model = make_tiny_checkpoint(tmp_path / arch, arch=arch, seed=5)
    prompts = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [9, 8, 7], [5] * 20]
    params = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    want = [o.token_ids for o in LLM(model=str(model), backend="cpu", device="cpu").generate(prompts, params)]
    got = [o.token_ids for o in LLM(model=str(model), backend="triton", device="cuda").generate(prompts, params)]
    assert got == want


def test_cuda_graph_decode_equals_eager_on_gpu(tmp_path):
    """The real CUDA-graph path: Triton kernels captured in torch.cuda.CUDAGraph, padded decode batches replayed."""
    model = make_tiny_checkpoint(tmp_path / "tiny", arch="qwen2", seed=4)
    prompts = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [9, 8, 7], [5] * 20, [11, 12]]
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (12, 9, 6, 3)]
    options = dict(backend="triton", device="cuda", max_num_seqs=8)
    want = [o.token_ids for o in LLM(model=str(model), enforce_eager=True, **options).generate(prompts, params)]
    llm = LLM(model=str(model), enforce_eager=False, **options)
    assert type(llm.engine.runner.graphs).__name__ == "CUDAGraphWrapper"
    got = [o.token_ids for o in llm.generate(prompts, params)]
    assert got == want
    stats = llm.engine.stats()
    assert stats["num_graph_steps"] == 11 and stats["num_padded_tokens"] > 0
