"""The npu backend of the MLA kernels and grouped top-k routing against the CPU reference, on DeepSeek-like shapes
(latent 512, rope 64), run against the torch_npu emulation (verified against an emulation of torch_npu semantics;
not run on Ascend hardware here)."""
from __future__ import annotations

import pytest
import torch

from mini_platform import ops
from mini_platform.ops.graph import Graph, GraphCaptureError, graph

LATENT, ROPE, HEADS, BLOCK = 512, 64, 16, 128


def tol(dtype: torch.dtype) -> dict:
    return dict(atol=2e-2, rtol=2e-2) if dtype == torch.bfloat16 else dict(atol=1e-5, rtol=1e-5)


def latent_cache(num_blocks: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(num_blocks, BLOCK, 1, LATENT, generator=g).to(dtype),
            torch.randn(num_blocks, BLOCK, 1, ROPE, generator=g).to(dtype))


def block_tables(batch: int, per_request: int, num_blocks: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(num_blocks, generator=g)[:batch * per_request].view(batch, per_request).to(torch.int32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_concat_and_cache_mla_matches_the_reference(emulated_npu, dtype):
    g = torch.Generator().manual_seed(2)
    kv_c, k_pe = torch.randn(6, LATENT, generator=g).to(dtype), torch.randn(6, ROPE, generator=g).to(dtype)
    slots = torch.tensor([3, -1, 130, 7, -1, 255], dtype=torch.int32)
    caches = {b: latent_cache(2, dtype) for b in ("cpu", "npu")}
    for backend, (c, pe) in caches.items():
        ops.concat_and_cache_mla(kv_c, k_pe, c, pe, slots, backend=backend)
    assert torch.equal(caches["cpu"][0], caches["npu"][0]) and torch.equal(caches["cpu"][1], caches["npu"][1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mla_decode_matches_the_reference(emulated_npu, dtype):
    kv_c, k_pe = latent_cache(8, dtype)
    tables = block_tables(3, 2, 8)
    seq_lens = torch.tensor([200, 0, 37], dtype=torch.int32)     # a request of length 0 (graph padding) -> zeros
    g = torch.Generator().manual_seed(3)
    q_nope = torch.randn(3, HEADS, LATENT, generator=g).to(dtype)
    q_pe = torch.randn(3, HEADS, ROPE, generator=g).to(dtype)
    args = (q_nope, q_pe, kv_c, k_pe, tables, seq_lens, LATENT ** -0.5)
    expected = ops.mla_decode_attention(*args, backend="cpu")
    got = ops.mla_decode_attention(*args, backend="npu")
    assert got.shape == expected.shape and got.dtype == dtype
    torch.testing.assert_close(got, expected, **tol(dtype))
    assert not got[1].any()


def test_mla_decode_refuses_graph_capture(emulated_npu):
    kv_c, k_pe = latent_cache(2, torch.float32)
    q = torch.zeros(1, HEADS, LATENT), torch.zeros(1, HEADS, ROPE)
    with pytest.raises(GraphCaptureError, match="mla_decode_attention"), graph(Graph()):
        ops.mla_decode_attention(*q, kv_c, k_pe, block_tables(1, 1, 2), torch.tensor([3], dtype=torch.int32), 1.0,
                                 backend="npu")


def test_gather_mla_cache_matches_the_reference(emulated_npu):
    kv_c, k_pe = latent_cache(8, torch.bfloat16)
    tables, seq_lens = block_tables(3, 2, 8), torch.tensor([130, 0, 5], dtype=torch.int32)
    expected = ops.gather_mla_cache(kv_c, k_pe, tables, seq_lens, backend="cpu")
    got = ops.gather_mla_cache(kv_c, k_pe, tables, seq_lens, backend="npu")
    assert all(torch.equal(a, b) for a, b in zip(got, expected))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mla_prefill_matches_the_reference(emulated_npu, dtype):
    # request 0: a whole prompt; 1: 3 new tokens after 9 cached; 2: no queries; 3: 1 new after 4 cached.
    q_lens, kv_lens = [7, 3, 0, 1], [7, 12, 4, 5]
    query_start_loc = torch.tensor([0, 7, 10, 10, 11], dtype=torch.int32)
    kv_start_loc = torch.tensor([0, 7, 19, 23, 28], dtype=torch.int32)
    assert sum(q_lens) == 11 and sum(kv_lens) == 28
    g = torch.Generator().manual_seed(4)
    query = torch.randn(13, 4, 192, generator=g).to(dtype)    # 2 rows of padding past query_start_loc[-1]
    key = torch.randn(28, 4, 192, generator=g).to(dtype)
    value = torch.randn(28, 4, 128, generator=g).to(dtype)
    args = (query, key, value, query_start_loc, kv_start_loc, 192 ** -0.5)
    expected = ops.mla_prefill_attention(*args, backend="cpu")
    got = ops.mla_prefill_attention(*args, backend="npu")
    assert got.shape == expected.shape and got.dtype == dtype
    torch.testing.assert_close(got, expected, **tol(dtype))


def test_mla_prefill_with_a_query_no_wider_than_the_value(emulated_npu):
    """npu_ring_mla splits query and key at the value's width; a model with Dqk <= Dv gets zero columns first."""
    g = torch.Generator().manual_seed(5)
    query, key, value = torch.randn(7, 2, 12, generator=g), torch.randn(10, 2, 12, generator=g), torch.randn(10, 2, 16, generator=g)
    args = (query, key, value, torch.tensor([0, 3, 7], dtype=torch.int32), torch.tensor([0, 3, 10], dtype=torch.int32), 0.3)
    torch.testing.assert_close(ops.mla_prefill_attention(*args, backend="npu"),
                               ops.mla_prefill_attention(*args, backend="cpu"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_interleaved_rotary_embedding_matches_the_reference(emulated_npu, dtype):
    g = torch.Generator().manual_seed(5)
    positions = torch.tensor([0, 5, 17, 3])
    query, key = torch.randn(4, HEADS * ROPE, generator=g).to(dtype), torch.randn(4, ROPE, generator=g).to(dtype)
    cos_sin_cache = torch.randn(32, ROPE, generator=g)
    expected = ops.rotary_embedding(positions, query, key, ROPE, cos_sin_cache, False, backend="cpu")
    calls = []
    original = emulated_npu.npu_interleave_rope
    emulated_npu.npu_interleave_rope = lambda *a: calls.append(a) or original(*a)
    got = ops.rotary_embedding(positions, query, key, ROPE, cos_sin_cache, False, backend="npu")
    assert len(calls) == 2
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, **tol(dtype))


def test_the_fused_kv_op_is_rms_norm_then_deinterleaved_rope_then_the_cache_write(emulated_npu):
    """``npu_kv_rmsnorm_rope_cache`` = rms_norm + interleaved rope + concat_and_cache_mla, except that it stores
    k_pe de-interleaved (as its document's formula says): the reason the npu concat_and_cache_mla does not use it."""
    g = torch.Generator().manual_seed(6)
    tokens, dtype = 5, torch.bfloat16
    kv = torch.randn(tokens, 1, 1, LATENT + ROPE, generator=g).to(dtype)
    gamma = torch.randn(LATENT, generator=g).to(dtype)
    positions = torch.tensor([4, 0, 9, 2, 11])
    cos_sin_cache = torch.randn(16, ROPE, generator=g)
    slots = torch.tensor([5, 200, 17, 0, 131])
    cos, sin = (torch.cat((t, t), dim=-1).to(dtype)[:, None, None, :]
                for t in cos_sin_cache[positions].chunk(2, dim=-1))
    fused = latent_cache(2, dtype)
    k_cache, ckv_cache, k_embed, y = emulated_npu.npu_kv_rmsnorm_rope_cache(
        kv, gamma, cos, sin, slots, fused[1], fused[0], epsilon=1e-6, cache_mode="PA", is_output_kv=True)
    assert k_cache is fused[1] and ckv_cache is fused[0]

    kv_c, k_pe = kv.view(tokens, -1).split([LATENT, ROPE], dim=-1)
    kv_c = ops.rms_norm(kv_c, gamma, 1e-6, backend="cpu")
    _, k_pe = ops.rotary_embedding(positions, k_pe.contiguous(), k_pe.contiguous(), ROPE,
                                   cos_sin_cache.to(dtype), False, backend="cpu")
    k_pe = torch.cat((k_pe[:, 0::2], k_pe[:, 1::2]), dim=-1)     # the fused op's de-interleaved order
    composed = latent_cache(2, dtype)
    ops.concat_and_cache_mla(kv_c, k_pe, *composed, slots.to(torch.int32), backend="cpu")
    torch.testing.assert_close(y.view(tokens, LATENT), kv_c, **tol(dtype))
    torch.testing.assert_close(k_embed.view(tokens, ROPE), k_pe, **tol(dtype))
    for a, b in zip(fused, composed):
        torch.testing.assert_close(a, b, **tol(dtype))


ROUTING = [  # (scoring_func, renormalize, bias, routed_scaling_factor)
    ("sigmoid", True, True, 2.5), ("sigmoid", False, True, 1.0), ("sigmoid", True, False, 1.0),
    ("softmax", False, False, 1.0), ("softmax", True, False, 16.0), ("softmax", True, True, 1.0),
]


@pytest.mark.parametrize("scoring_func, renormalize, with_bias, scaling", ROUTING)
def test_grouped_topk_matches_the_reference(emulated_npu, scoring_func, renormalize, with_bias, scaling):
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(9, 64, generator=g).to(torch.bfloat16)
    bias = torch.randn(64, generator=g) if with_bias else None
    args = (logits, 6, 8, 3, renormalize, scoring_func, bias, scaling)
    expected = ops.moe_grouped_topk(*args, backend="cpu")
    got = ops.moe_grouped_topk(*args, backend="npu")
    assert got[1].dtype == torch.int32 and got[0].dtype == torch.float32
    assert torch.equal(got[1], expected[1])
    torch.testing.assert_close(got[0], expected[0], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("with_bias", [False, True])
def test_grouped_topk_breaks_ties_like_the_reference(emulated_npu, with_bias):
    """Equal logits everywhere, then equal groups: lower group and lower expert ids come first."""
    logits = torch.zeros(3, 16)
    logits[1, 8:] = 1.0                      # groups 2 and 3 tie at the top
    logits[2] = torch.tensor([1.0, 1.0, 0.0, 0.0] * 4)
    bias = torch.zeros(16) if with_bias else None
    args = (logits, 3, 4, 2, True, "sigmoid", bias, 1.0)
    expected = ops.moe_grouped_topk(*args, backend="cpu")
    got = ops.moe_grouped_topk(*args, backend="npu")
    assert torch.equal(got[1], expected[1])
    torch.testing.assert_close(got[0], expected[0])


def test_grouped_topk_refuses_groups_the_op_cannot_take(emulated_npu):
    """npu_moe_gating_top_k wants more than 2 experts per group (its document): a clear error, not a wrong answer."""
    with pytest.raises(ValueError, match="groups of more than 2"):
        ops.moe_grouped_topk(torch.randn(2, 8), 2, 4, 2, True, "sigmoid", None, 1.0, backend="npu")
