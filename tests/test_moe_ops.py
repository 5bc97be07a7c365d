"""MoE kernels on every backend against the CPU specification, and the CPU specification against a per-token
formula. Triton runs in the Triton interpreter on the CPU; the npu backend (both call sequences, v1 and v2)
is verified against an emulation of torch_npu semantics; not run on Ascend hardware here."""
from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.nn.functional as F

from mini_platform import ops
from mini_platform.model import expert_map_for_rank
from mini_platform.ops.triton.moe import moe_align_block_size

REAL_TORCH_NPU = importlib.util.find_spec("torch_npu") is not None
# (backend, npu routing): every implementation of the two kernels.
IMPLEMENTATIONS = [("cpu", None), ("triton", None), ("npu", "v1"), ("npu", "v2")]
TOL = {torch.float32: 2e-5, torch.bfloat16: 4e-2}


@pytest.fixture
def backend(request, monkeypatch):
    """Select one implementation; the npu ones run inside the torch_npu emulation."""
    name, routing = request.param
    if name != "npu":
        yield name
        return
    if REAL_TORCH_NPU:
        pytest.skip("a real torch_npu is installed: the emulated npu checks do not run here")
    from mini_platform.ascend.emulation import emulated_torch_npu
    monkeypatch.setenv("MINI_PLATFORM_NPU_MOE_ROUTING", routing)
    with emulated_torch_npu():
        yield name


def make_experts(num_experts: int, hidden: int, inter: int, dtype: torch.dtype, seed: int):
    g = torch.Generator().manual_seed(seed)
    w13 = (torch.randn(num_experts, 2 * inter, hidden, generator=g) / hidden ** 0.5).to(dtype)
    w2 = (torch.randn(num_experts, hidden, inter, generator=g) / inter ** 0.5).to(dtype)
    return w13, w2


def routing(tokens: int, num_experts: int, top_k: int, seed: int, skew: float = 0.0):
    """Routing from random logits; ``skew`` > 0 favours the low expert ids, so the high ones get few or no tokens."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(tokens, num_experts, generator=g) - skew * torch.arange(num_experts)
    return ops.moe_topk_softmax(logits, top_k, True, backend="cpu")


def per_token_reference(hidden, w13, w2, weights, ids):
    """The layer as its formula reads, token by token and slot by slot, in fp64."""
    out = torch.zeros(hidden.shape, dtype=torch.float64)
    for t in range(hidden.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            gate, up = (w13[e].double() @ hidden[t].double()).chunk(2)
            out[t] += float(weights[t, j]) * (w2[e].double() @ (F.silu(gate) * up))
    return out


# (tokens, experts, top_k, skew): uneven loads, experts without tokens, one token, top_k = 1 and = E.
CASES = [(1, 4, 2, 0.0), (7, 8, 2, 3.0), (33, 6, 3, 0.0), (20, 3, 1, 0.0), (9, 4, 4, 0.0), (40, 16, 2, 1.0)]


@pytest.mark.parametrize("tokens, num_experts, top_k, skew", CASES)
def test_cpu_spec_matches_the_per_token_formula(tokens, num_experts, top_k, skew):
    hidden = torch.randn(tokens, 24, generator=torch.Generator().manual_seed(1))
    w13, w2 = make_experts(num_experts, 24, 20, torch.float32, seed=2)
    weights, ids = routing(tokens, num_experts, top_k, seed=3, skew=skew)
    got = ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu")
    torch.testing.assert_close(got.double(), per_token_reference(hidden, w13, w2, weights, ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", IMPLEMENTATIONS, indirect=True, ids=lambda p: "-".join(filter(None, p)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("tokens, num_experts, top_k, skew", CASES)
def test_fused_experts_match_the_cpu_spec(backend, dtype, tokens, num_experts, top_k, skew):
    hidden = torch.randn(tokens, 48, generator=torch.Generator().manual_seed(4)).to(dtype)
    w13, w2 = make_experts(num_experts, 48, 40, dtype, seed=5)
    weights, ids = routing(tokens, num_experts, top_k, seed=6, skew=skew)
    if skew >= 3:   # the case is meant to leave experts idle: make sure it does
        assert torch.bincount(ids.flatten().long(), minlength=num_experts).eq(0).any()
    want = ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu")
    got = ops.fused_experts(hidden, w13, w2, weights, ids, backend=backend)
    assert got.dtype == dtype and got.shape == hidden.shape
    torch.testing.assert_close(got.float(), want.float(), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("backend", IMPLEMENTATIONS, indirect=True, ids=lambda p: "-".join(filter(None, p)))
@pytest.mark.parametrize("placement, ep_size", [("linear", 2), ("linear", 3), ("round_robin", 3)])
def test_expert_map_shares_sum_to_the_whole_layer(backend, placement, ep_size):
    """Each rank holds only its experts (w13/w2 of E_local rows) and computes exactly its share."""
    num_experts, top_k = 8, 2
    hidden = torch.randn(13, 32, generator=torch.Generator().manual_seed(7))
    w13, w2 = make_experts(num_experts, 32, 24, torch.float32, seed=8)
    weights, ids = routing(13, num_experts, top_k, seed=9, skew=0.5)
    whole = ops.fused_experts(hidden, w13, w2, weights, ids, backend="cpu")
    total = torch.zeros_like(whole)
    for rank in range(ep_size):
        expert_map = expert_map_for_rank(num_experts, ep_size, rank, placement)
        owned = [g for g in range(num_experts) if expert_map[g] >= 0]
        assert expert_map[owned].tolist() == list(range(len(owned)))
        share = ops.fused_experts(hidden, w13[owned], w2[owned], weights, ids, expert_map, backend=backend)
        mine = torch.isin(ids, torch.tensor(owned, dtype=ids.dtype))
        untouched = ~mine.any(dim=1)                     # tokens with no expert here get exactly zero
        assert torch.equal(share[untouched], torch.zeros_like(share[untouched]))
        total += share
    torch.testing.assert_close(total, whole, atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("backend", IMPLEMENTATIONS, indirect=True, ids=lambda p: "-".join(filter(None, p)))
@pytest.mark.parametrize("renormalize", [True, False])
def test_topk_softmax_matches_the_cpu_spec(backend, renormalize):
    logits = torch.randn(17, 10, generator=torch.Generator().manual_seed(10))
    want_w, want_ids = ops.moe_topk_softmax(logits, 3, renormalize, backend="cpu")
    got_w, got_ids = ops.moe_topk_softmax(logits, 3, renormalize, backend=backend)
    assert got_w.dtype == torch.float32 and got_ids.dtype == torch.int32
    assert torch.equal(got_ids, want_ids)
    torch.testing.assert_close(got_w, want_w, atol=1e-6, rtol=1e-6)


def test_topk_softmax_spec_is_softmax_then_topk():
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0], [0.5, 0.5, 4.0, 0.5]])
    probs = torch.softmax(logits, dim=-1)
    weights, ids = ops.moe_topk_softmax(logits, 2, False, backend="cpu")
    assert ids.tolist() == [[1, 2], [2, 0]]   # experts 0, 1 and 3 tie in row 1: the lowest id wins
    # A full tie: the order is the experts' (torch.topk promises no order among ties).
    assert ops.moe_topk_softmax(torch.zeros(3, 8), 3, True, backend="cpu")[1].tolist() == [[0, 1, 2]] * 3
    torch.testing.assert_close(weights, torch.topk(probs, 2).values)
    renormed, _ = ops.moe_topk_softmax(logits, 2, True, backend="cpu")
    torch.testing.assert_close(renormed, weights / weights.sum(-1, keepdim=True))
    torch.testing.assert_close(renormed.sum(-1), torch.ones(2))
    # bf16 logits: the softmax is still fp32 and so are the weights.
    w16, _ = ops.moe_topk_softmax(logits.bfloat16(), 2, False, backend="cpu")
    assert w16.dtype == torch.float32


@pytest.mark.parametrize("backend", [("cpu", None), ("triton", None)], indirect=True, ids=lambda p: p[0])
def test_ties_go_to_the_lower_expert_id(backend):
    """Equal logits: the lower expert id first, as vLLM's CUDA topkGatingSoftmax (torch.topk promises no order).
    The npu backend is compared on tie-free logits only: the tie order of npu_moe_gating_top_k_softmax is not
    documented, and the emulation takes torch.topk's."""
    logits = torch.zeros(3, 19)
    logits[:, 11:15] = 3.0
    logits[1, 0] = 5.0
    _, ids = ops.moe_topk_softmax(logits, 3, False, backend=backend)
    assert ids.tolist() == [[11, 12, 13], [0, 11, 12], [11, 12, 13]]


def test_bad_arguments_are_named():
    w13, w2 = make_experts(4, 16, 8, torch.float32, seed=0)
    hidden = torch.zeros(2, 16)
    weights, ids = routing(2, 4, 2, seed=0)
    with pytest.raises(ValueError, match="top_k"):
        ops.moe_topk_softmax(torch.zeros(2, 4), 5, True, backend="cpu")
    with pytest.raises(ValueError, match="w2 must be"):
        ops.fused_experts(hidden, w13, w2[:, :, :4], weights, ids, backend="cpu")
    with pytest.raises(ValueError, match="w13 must be"):
        ops.fused_experts(hidden, w13[:, :, :8], w2, weights, ids, backend="cpu")
    with pytest.raises(ValueError, match="topk_weights and topk_ids"):
        ops.fused_experts(hidden, w13, w2, weights[:1], ids, backend="cpu")
    with pytest.raises(ValueError, match=r"global expert ids in \[0, 4\)"):
        ops.fused_experts(hidden, w13, w2, weights, ids + 3, backend="cpu")
    with pytest.raises(ValueError, match="expert_map"):
        ops.fused_experts(hidden, w13, w2, weights, ids, torch.zeros(4, 1, dtype=torch.int32), backend="cpu")


def test_kernels_dispatch_to_each_backend_module():
    import mini_platform.ascend.ops.moe as npu_moe
    import mini_platform.ops.cpu.moe as cpu_moe
    import mini_platform.ops.triton.moe as triton_moe

    for name in ("moe_topk_softmax", "fused_experts"):
        assert ops.get_kernel(name, "cpu") is getattr(cpu_moe, name)
        assert ops.get_kernel(name, "triton") is getattr(triton_moe, name)
        assert ops.get_kernel(name, "npu") is getattr(npu_moe, name)


def test_unknown_npu_routing_is_rejected(monkeypatch):
    monkeypatch.setenv("MINI_PLATFORM_NPU_MOE_ROUTING", "v3")
    w13, w2 = make_experts(2, 8, 4, torch.float32, seed=0)
    weights, ids = routing(1, 2, 1, seed=0)
    with pytest.raises(ValueError, match="v3"):
        ops.fused_experts(torch.zeros(1, 8), w13, w2, weights, ids, backend="npu")


# -- vLLM's moe_align_block_size --------------------------------------------------------------------
def test_align_block_size_docstring_example():
    """vLLM's docstring example, ids 1..4 shifted to 0..3 (the docstring numbers experts from 1)."""
    topk_ids = torch.tensor([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]], dtype=torch.int32) - 1
    sorted_ids, expert_ids, num_post = moe_align_block_size(topk_ids, 4, 4)
    assert num_post.tolist() == [16]
    assert sorted_ids[:16].tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12]
    assert expert_ids[:4].tolist() == [0, 1, 2, 3]
    assert len(sorted_ids) == 12 + 4 * 3 and sorted_ids[16:].eq(12).all()


def test_align_block_size_hand_case_with_an_idle_expert_and_a_map():
    topk_ids = torch.tensor([[0, 2], [2, 0], [2, 3]], dtype=torch.int32)   # expert 1 gets nothing
    sorted_ids, expert_ids, num_post = moe_align_block_size(topk_ids, 2, 4)
    assert num_post.tolist() == [8]                                       # 2 + 0 + 4 + 2 rows
    assert sorted_ids[:8].tolist() == [0, 3, 1, 2, 4, 6, 5, 6]           # expert 3: row 5, then the sentinel 6
    assert expert_ids[:4].tolist() == [0, 2, 2, 3]
    _, mapped, _ = moe_align_block_size(topk_ids, 2, 4, torch.tensor([-1, -1, 0, 1], dtype=torch.int32))
    assert mapped[:4].tolist() == [-1, 0, 0, 1]


@pytest.mark.parametrize("tokens, num_experts, top_k, block_size", [(1, 4, 2, 16), (37, 8, 2, 4), (64, 6, 3, 16),
                                                                     (5, 16, 1, 1), (50, 3, 3, 64)])
def test_align_block_size_invariants(tokens, num_experts, top_k, block_size):
    _, ids = routing(tokens, num_experts, top_k, seed=tokens, skew=1.0)
    sorted_ids, expert_ids, num_post = moe_align_block_size(ids, block_size, num_experts)
    flat, numel = ids.flatten().long(), ids.numel()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    assert int(num_post) == int(padded.sum()) and int(num_post) % block_size == 0
    assert len(sorted_ids) == numel + num_experts * (block_size - 1)
    real = sorted_ids[sorted_ids < numel]
    assert sorted(real.tolist()) == list(range(numel))                    # every pair exactly once
    assert sorted_ids[int(num_post):].eq(numel).all()
    start = 0
    for e in range(num_experts):
        run = sorted_ids[start:start + int(padded[e])]
        mine = run[run < numel]
        assert mine.tolist() == torch.nonzero(flat == e).flatten().tolist()   # ascending pair index
        assert run[len(mine):].eq(numel).all()                                # padding at the end of the run
        assert expert_ids[start // block_size:(start + int(padded[e])) // block_size].eq(e).all()
        start += int(padded[e])


def test_mixed_dtypes_are_rejected():
    w13, w2 = make_experts(2, 8, 4, torch.float32, seed=0)
    weights, ids = routing(1, 2, 1, seed=0)
    with pytest.raises(ValueError, match="share a dtype"):
        ops.fused_experts(torch.zeros(1, 8, dtype=torch.bfloat16), w13, w2, weights, ids, backend="cpu")
