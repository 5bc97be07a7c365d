"""The Triton MLA kernels and grouped top-k routing against the CPU specification (in the Triton interpreter).

Shapes: tiny ones with odd sizes (L=24, R=8, 3 heads, non-power-of-2 head dims) and DeepSeek-V3's (L=512, R=64,
16 heads, block size 16, Dqk/Dv 192/128); padding slots, requests of length 0, shuffled block tables. fp32 must
agree to fp32 rounding; bf16/fp16 to one ulp of their dtype (the interpreter truncates fp32 -> bf16). The routing
ids must be equal bit for bit, ties included. tests/test_triton_compile.py compiles the same kernels for GPUs.
"""
from __future__ import annotations

import pytest
import torch

from mini_platform import ops

TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2)}
TINY = dict(latent=24, rope=8, heads=3, block_size=4)
V3 = dict(latent=512, rope=64, heads=16, block_size=16)


def rand(*shape, gen, dtype=torch.float32):
    return torch.randn(*shape, generator=gen).to(dtype)


def latent_cache(gen, num_blocks, latent, rope, block_size, dtype):
    return (rand(num_blocks, block_size, 1, latent, gen=gen, dtype=dtype),
            rand(num_blocks, block_size, 1, rope, gen=gen, dtype=dtype))


def block_tables(gen, num_blocks, batch, max_blocks):
    """Distinct shuffled blocks per request (a shared pool, as the engine's)."""
    return torch.randperm(num_blocks, generator=gen)[:batch * max_blocks].view(batch, max_blocks).to(torch.int32)


def both(kernel, *args):
    """``(triton, cpu)`` results of ``kernel``; the inputs must come back unchanged."""
    before = [a.clone() for a in args if isinstance(a, torch.Tensor)]
    got = kernel(*args, backend="triton")
    assert all(torch.equal(b, a) for b, a in zip(before, [a for a in args if isinstance(a, torch.Tensor)]))
    return got, kernel(*args, backend="cpu")


def assert_agrees(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.float(), expected.float(), **TOL[expected.dtype])


# -- the cache ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [TINY, V3], ids=["tiny", "v3"])
def test_concat_and_cache_mla_writes_the_same_slots(shape, dtype):
    gen = torch.Generator().manual_seed(1)
    caches = latent_cache(gen, 5, shape["latent"], shape["rope"], shape["block_size"], dtype)
    slots = torch.tensor([7, -1, 0, 5 * shape["block_size"] - 1, -1, 3], dtype=torch.int32)
    # in the cache's dtype: a copy, exact (the interpreter would truncate an fp32 -> bf16 conversion, a GPU rounds)
    kv_c, k_pe = rand(6, shape["latent"], gen=gen, dtype=dtype), rand(6, shape["rope"], gen=gen, dtype=dtype)
    written = {}
    for backend in ("triton", "cpu"):
        kv_c_cache, k_pe_cache = (c.clone() for c in caches)
        ops.concat_and_cache_mla(kv_c, k_pe, kv_c_cache, k_pe_cache, slots, backend=backend)
        written[backend] = kv_c_cache, k_pe_cache
    for got, want in zip(written["triton"], written["cpu"]):
        assert torch.equal(got, want)
    assert not torch.equal(written["cpu"][0], caches[0])


def test_concat_and_cache_mla_takes_strided_rows_and_zero_tokens():
    gen = torch.Generator().manual_seed(2)
    kv_c_cache, k_pe_cache = latent_cache(gen, 2, 24, 8, 4, torch.float32)
    packed = rand(3, 24 + 8, gen=gen)             # kv_a_proj's output: the latent and the rope key side by side
    slots = torch.tensor([1, 6, -1], dtype=torch.int32)
    got, want = (kv_c_cache.clone(), k_pe_cache.clone()), (kv_c_cache.clone(), k_pe_cache.clone())
    ops.concat_and_cache_mla(packed[:, :24], packed[:, 24:], *got, slots, backend="triton")
    ops.concat_and_cache_mla(packed[:, :24], packed[:, 24:], *want, slots, backend="cpu")
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    ops.concat_and_cache_mla(packed[:0, :24], packed[:0, 24:], *got, slots[:0], backend="triton")
    assert torch.equal(got[0], want[0])
    with pytest.raises(ValueError, match="kv_c"):
        ops.concat_and_cache_mla(packed[:, :23], packed[:, 24:], *got, slots, backend="triton")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [TINY, V3], ids=["tiny", "v3"])
def test_gather_mla_cache_reads_requests_end_to_end(shape, dtype):
    gen = torch.Generator().manual_seed(3)
    caches = latent_cache(gen, 9, shape["latent"], shape["rope"], shape["block_size"], dtype)
    tables = block_tables(gen, 9, 4, 2)
    seq_lens = torch.tensor([0, 2 * shape["block_size"], 5, 0], dtype=torch.int32)   # empty requests, first and last
    got, want = both(ops.gather_mla_cache, *caches, tables, seq_lens)
    assert got[0].shape == (2 * shape["block_size"] + 5, shape["latent"])
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    empty = ops.gather_mla_cache(*caches, tables, torch.zeros(4, dtype=torch.int32), backend="triton")
    assert empty[0].shape == (0, shape["latent"]) and empty[1].shape == (0, shape["rope"])


# -- the absorbed decode -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype, seq_lens", [
    (TINY, torch.float32, [0, 1, 3, 13, 16]),           # 0 tokens, fewer tokens than splits, a full table
    (TINY, torch.bfloat16, [7, 0, 16, 2, 5]),
    (V3, torch.float32, [48, 1, 0, 33]),
    (V3, torch.bfloat16, [17, 48, 0, 2]),
    (V3, torch.float16, [40, 3, 0, 1]),
], ids=["tiny-fp32", "tiny-bf16", "v3-fp32", "v3-bf16", "v3-fp16"])
def test_mla_decode_attention_agrees(shape, dtype, seq_lens):
    gen = torch.Generator().manual_seed(4)
    batch, max_blocks = len(seq_lens), 4 if shape is TINY else 3
    caches = latent_cache(gen, batch * max_blocks + 2, shape["latent"], shape["rope"], shape["block_size"], dtype)
    tables = block_tables(gen, batch * max_blocks + 2, batch, max_blocks)
    q_nope = rand(batch, shape["heads"], shape["latent"], gen=gen, dtype=dtype)
    q_pe = rand(batch, shape["heads"], shape["rope"], gen=gen, dtype=dtype)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    got, want = both(ops.mla_decode_attention, q_nope, q_pe, *caches, tables, lens, (128 + 64) ** -0.5)
    assert_agrees(got, want)
    assert torch.equal(got[lens == 0], torch.zeros_like(got[lens == 0]))   # graph padding: zeros, not NaN


def test_mla_decode_attention_takes_strided_queries_and_more_heads_than_a_block():
    """20 heads: two head blocks, the second partly masked; q_nope and q_pe cut out of one tensor."""
    gen = torch.Generator().manual_seed(5)
    caches = latent_cache(gen, 6, 24, 8, 4, torch.float32)
    tables = block_tables(gen, 6, 2, 3)
    q = rand(2, 20, 24 + 8, gen=gen)
    got, want = both(ops.mla_decode_attention, q[..., :24], q[..., 24:], *caches, tables,
                     torch.tensor([9, 12], dtype=torch.int32), 0.3)
    assert_agrees(got, want)
    with pytest.raises(ValueError, match="q_pe"):
        ops.mla_decode_attention(q[..., :24], q[..., :7], *caches, tables, torch.tensor([9, 12]), 0.3,
                                 backend="triton")


# -- the expanded prefill ----------------------------------------------------------------------------

def starts(lengths):
    return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)


@pytest.mark.parametrize("dims, dtype, q_lens, kv_lens", [
    ((3, 24, 20), torch.float32, [5, 0, 20, 1], [9, 3, 20, 17]),     # prefix before the queries; an empty request
    ((2, 24, 20), torch.bfloat16, [17, 3], [17, 40]),
    ((2, 192, 128), torch.float32, [18, 2], [18, 35]),              # DeepSeek-V3's Dqk / Dv
    ((2, 192, 128), torch.float16, [3, 16], [3, 30]),
], ids=["tiny-fp32", "tiny-bf16", "v3-fp32", "v3-fp16"])
def test_mla_prefill_attention_agrees(dims, dtype, q_lens, kv_lens):
    heads, qk_dim, v_dim = dims
    gen = torch.Generator().manual_seed(6)
    extra = 3      # rows past query_start_loc[-1] / kv_start_loc[-1]: zeros out, never read
    query = rand(sum(q_lens) + extra, heads, qk_dim, gen=gen, dtype=dtype)
    key = rand(sum(kv_lens) + extra, heads, qk_dim, gen=gen, dtype=dtype)
    value = rand(sum(kv_lens) + extra, heads, v_dim, gen=gen, dtype=dtype)
    got, want = both(ops.mla_prefill_attention, query, key, value, starts(q_lens), starts(kv_lens), qk_dim ** -0.5)
    assert_agrees(got, want)
    assert torch.equal(got[sum(q_lens):], torch.zeros_like(got[sum(q_lens):]))


# -- grouped top-k routing ---------------------------------------------------------------------------

ROUTING = [  # (experts, groups, kept groups, top_k)
    (256, 8, 4, 8),     # DeepSeek-V3
    (160, 8, 3, 6),     # DeepSeek-V2
    (12, 3, 2, 3),      # odd: 3 groups of 4
    (6, 6, 4, 3),       # one expert per group
    (10, 2, 1, 5),      # groups of 5, top_k = a whole group
]


@pytest.mark.parametrize("bias", [True, False], ids=["v3-bias", "v2-no-bias"])
@pytest.mark.parametrize("scoring_func", ["sigmoid", "softmax"])
@pytest.mark.parametrize("experts, groups, kept, top_k", ROUTING)
def test_moe_grouped_topk_agrees(experts, groups, kept, top_k, scoring_func, bias):
    gen = torch.Generator().manual_seed(7 + experts)
    logits = rand(6, experts, gen=gen) * 2
    correction = rand(experts, gen=gen) * 0.2 if bias else None
    for renormalize, factor in ((True, 2.5), (False, 1.0)):
        (weights, ids), (want_weights, want_ids) = both(ops.moe_grouped_topk, logits, top_k, groups, kept,
                                                        renormalize, scoring_func, correction, factor)
        assert ids.dtype == torch.int32 and torch.equal(ids, want_ids)
        assert weights.dtype == torch.float32
        torch.testing.assert_close(weights, want_weights, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("bias", [True, False], ids=["v3-bias", "v2-no-bias"])
def test_moe_grouped_topk_breaks_ties_by_lower_id(bias):
    """Equal values everywhere: groups and experts tie, and the lower id must win both times; bf16 logits."""
    rows = [torch.zeros(16),                                           # every expert equal
            torch.tensor([1., 1, 0, 0, 2, 0, 0, 2, 1, 1, 0, 0, 0, 0, 1, 1]),   # groups 1 and 0/2/3 tie in pairs
            torch.tensor([3., 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 0, 3, 3, 0])]   # a repeated best inside a group
    logits = torch.stack(rows).to(torch.bfloat16)
    correction = torch.full((16,), 0.25) if bias else None
    for scoring_func in ("sigmoid", "softmax"):
        (weights, ids), (want_weights, want_ids) = both(ops.moe_grouped_topk, logits, 5, 4, 2, True, scoring_func,
                                                        correction, 1.0)
        assert torch.equal(ids, want_ids), (scoring_func, ids, want_ids)
        torch.testing.assert_close(weights, want_weights, rtol=1e-6, atol=1e-7)
    assert ops.moe_grouped_topk(logits, 5, 4, 2, True, "sigmoid", correction, backend="triton")[1][0].tolist() == \
        [0, 1, 2, 3, 4]


def test_moe_grouped_topk_rejects_what_the_specification_rejects():
    with pytest.raises(ValueError, match="num_expert_group"):
        ops.moe_grouped_topk(torch.zeros(2, 10), 2, 3, 1, True, backend="triton")
    weights, ids = ops.moe_grouped_topk(torch.zeros(0, 8), 2, 4, 2, True, backend="triton")
    assert weights.shape == ids.shape == (0, 2)
