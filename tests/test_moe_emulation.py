"""The emulated torch_npu MoE ops on hand-made cases worked out from their documentation (op-plugin
``docs/zh/custom_APIs/torch_npu/`` formulas and numpy references; ``npu_moe_token_unpermute`` from the
op-plugin test's reference), not from our own kernels. Verified against an emulation of torch_npu
semantics; not run on Ascend hardware here."""
from __future__ import annotations

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch_npu") is not None,
                                reason="a real torch_npu is installed; the emulation refuses to shadow it")


def i32(values):
    return torch.tensor(values, dtype=torch.int32)


# The documentation's init_routing example: 3 tokens, K=2, the row_idx gating gives (j*N + t).
X = torch.tensor([[0.1] * 4, [0.2] * 4, [0.3] * 4])
ROW_IDX = i32([[0, 3], [1, 4], [2, 5]])
EXPERT_IDX = i32([[1, 2], [0, 1], [0, 2]])


def test_gating_top_k_softmax_hand_computed(emulated_npu):
    x = torch.tensor([[1.0, 3.0, 2.0], [2.0, 0.0, 1.0], [0.0, 0.0, 5.0]])
    y, expert_idx, row_idx = emulated_npu.npu_moe_gating_top_k_softmax(x, None, k=2)
    e = torch.exp(torch.tensor([1.0, 3.0, 2.0]))
    torch.testing.assert_close(y[0], torch.stack([e[1], e[2]]) / e.sum())
    assert expert_idx.tolist()[:2] == [[1, 2], [0, 2]] and expert_idx.dtype == torch.int32
    assert row_idx.tolist() == ROW_IDX.tolist()                # arange(N*k).reshape(k, N).T: row_idx[t, j] = j*N + t
    y16, _, _ = emulated_npu.npu_moe_gating_top_k_softmax(x.bfloat16(), k=1)
    assert y16.dtype == torch.bfloat16                          # y keeps x's dtype
    with pytest.raises(ValueError, match="0 < k"):
        emulated_npu.npu_moe_gating_top_k_softmax(x, k=4)


def test_init_routing_v1_documented_example(emulated_npu):
    expanded_x, expanded_row_idx, expanded_expert_idx = emulated_npu.npu_moe_init_routing(X, ROW_IDX, EXPERT_IDX, 3)
    # Stable sort of the token-major flat ids [1,2,0,1,0,2]: experts [0,0,1,1,2,2] from flat positions [2,4,0,3,1,5],
    # whose row_idx values (dst -> src) are [1,2,0,4,3,5]; expanded_row_idx is their inverse.
    assert expanded_expert_idx.tolist() == [0, 0, 1, 1, 2, 2]
    assert expanded_row_idx.tolist() == [2, 0, 1, 4, 3, 5]
    torch.testing.assert_close(expanded_x[:, 0], torch.tensor([0.2, 0.3, 0.1, 0.2, 0.1, 0.3]))
    # Pair (t=0, j=1) is row_idx 3 (= j*N + t): expanded_row_idx[3] = 4, and expanded_x[4] is token 0.
    assert expanded_x[expanded_row_idx[1 * 3 + 0]].tolist() == X[0].tolist()
    # active_num caps the expanded rows at min(active_num, N) * K.
    assert emulated_npu.npu_moe_init_routing(X, ROW_IDX, EXPERT_IDX, 2)[0].shape == (4, 4)


def test_compute_expert_tokens_documented_example(emulated_npu):
    assert emulated_npu.npu_moe_compute_expert_tokens(i32([0, 0, 0, 1, 1, 2]), 3).tolist() == [3, 5, 6]
    # An expert with no row ends where the previous one ends; trailing experts end at the total.
    assert emulated_npu.npu_moe_compute_expert_tokens(i32([0, 0, 2, 2]), 4).tolist() == [2, 2, 4, 4]
    with pytest.raises(ValueError, match="non-decreasing"):
        emulated_npu.npu_moe_compute_expert_tokens(i32([1, 0]), 2)


V2_IDS = i32([[2, 0], [1, 0], [2, 1]])   # token-major flat [2,0,1,0,2,1]; stable order [1,3,2,5,0,4]


def test_init_routing_v2_gather_and_scatter_indices(emulated_npu):
    x = torch.arange(3.0).unsqueeze(1).repeat(1, 2)            # token t is the row [t, t]
    out = emulated_npu.npu_moe_init_routing_v2(x, V2_IDS, active_num=6, expert_num=3, expert_tokens_num_type=1,
                                               expert_tokens_num_flag=True)
    expanded_x, gather_idx, counts, _ = out
    assert expanded_x[:, 0].tolist() == [0.0, 1.0, 1.0, 2.0, 0.0, 2.0]   # x[order // K]
    assert gather_idx.tolist() == [4, 0, 2, 1, 5, 3]                      # expanded_row_idx[order[r]] = r
    assert counts.tolist() == [2, 2, 2] and counts.dtype == torch.int64
    scatter_idx = emulated_npu.npu_moe_init_routing_v2(x, V2_IDS, expert_num=3, row_idx_type=1)[1]
    assert scatter_idx.tolist() == [1, 3, 2, 5, 0, 4]
    cumsum = emulated_npu.npu_moe_init_routing_v2(x, V2_IDS, expert_num=3, expert_tokens_num_flag=True)[2]
    assert cumsum.tolist() == [2, 4, 6]
    key_value = emulated_npu.npu_moe_init_routing_v2(x, V2_IDS, expert_num=3, expert_tokens_num_type=2,
                                                     expert_tokens_num_flag=True)[2]
    assert key_value.tolist() == [[0, 2], [1, 2], [2, 2]]


def test_init_routing_v2_active_expert_range(emulated_npu):
    """Range [1, 3): the two pairs of expert 0 are dropped (-1), counts cover experts 1 and 2 only."""
    x = torch.arange(3.0).unsqueeze(1)
    expanded_x, gather_idx, counts, _ = emulated_npu.npu_moe_init_routing_v2(
        x, V2_IDS, active_num=6, expert_num=3, expert_tokens_num_type=1, expert_tokens_num_flag=True,
        active_expert_range=[1, 3])
    assert gather_idx.tolist() == [2, -1, 0, -1, 3, 1]
    assert counts.tolist() == [2, 2]
    assert expanded_x.shape == (6, 1) and expanded_x[:4, 0].tolist() == [1.0, 2.0, 0.0, 2.0]


def test_v1_column_major_and_v2_token_major_index_the_same_rows(emulated_npu):
    """v1 numbers pair (t, j) as j*N + t, v2 as t*K + j; both sort the same way, so they name the same rows."""
    n, k = 11, 3
    ids = torch.stack([torch.randperm(6, generator=torch.Generator().manual_seed(t))[:k] for t in range(n)]).int()
    x = torch.randn(n, 5, generator=torch.Generator().manual_seed(99))
    row_idx = torch.arange(n * k, dtype=torch.int32).view(k, n).T.contiguous()
    x1, v1, _ = emulated_npu.npu_moe_init_routing(x, row_idx, ids, n)
    x2, v2, _, _ = emulated_npu.npu_moe_init_routing_v2(x, ids, active_num=n * k, expert_num=6)
    assert torch.equal(x1, x2)
    assert torch.equal(v1.view(k, n).T, v2.view(n, k))
    assert not torch.equal(v1, v2)                 # the flat layouts differ: the numbering matters


def test_grouped_matmul_cumsum_and_count_group_lists(emulated_npu):
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [5.0, 5.0]])
    w = torch.stack([torch.eye(2), torch.tensor([[2.0, 0.0], [0.0, 3.0]])])    # [G=2, K=2, N=2]
    want = torch.tensor([[1.0, 0.0], [0.0, 3.0], [2.0, 3.0], [0.0, 0.0]])       # row 3 is outside every group
    for group_list, kind in (([1, 3], 0), ([1, 2], 1)):
        out = emulated_npu.npu_grouped_matmul([x], [w], group_list=torch.tensor(group_list), split_item=2,
                                              group_type=0, group_list_type=kind)
        assert len(out) == 1 and torch.equal(out[0], want)
    with pytest.raises(ValueError, match="non-decreasing"):
        emulated_npu.npu_grouped_matmul([x], [w], group_list=torch.tensor([3, 1]), split_item=2, group_type=0)
    with pytest.raises(NotImplementedError, match="bias"):
        emulated_npu.npu_grouped_matmul([x], [w], bias=[torch.zeros(2, 2)], group_list=torch.tensor([1, 3]),
                                        split_item=2, group_type=0)


ROWS = torch.tensor([[10.0], [20.0], [30.0], [40.0]])
SCALES = torch.tensor([[0.5, 0.25], [1.0, 2.0]])


def test_finalize_routing_documented_formula(emulated_npu):
    src_to_dst = i32([0, 2, 1, 3])       # column-major: entry k*N + i
    out = emulated_npu.npu_moe_finalize_routing(ROWS, None, None, None, SCALES, src_to_dst, None)
    assert out.tolist() == [[0.5 * 10 + 0.25 * 20], [1 * 30 + 2 * 40]]
    skip = torch.tensor([[1.0], [2.0]])
    bias = torch.tensor([[100.0], [200.0]])
    experts = i32([[0, 1], [1, 0]])
    out = emulated_npu.npu_moe_finalize_routing(ROWS, skip1=skip, skip2=skip, bias=bias, scales=SCALES,
                                                expanded_src_to_dst_row=src_to_dst, export_for_source_row=experts)
    assert out.tolist() == [[2 + 0.5 * 110 + 0.25 * 220], [4 + 1 * 230 + 2 * 140]]
    row_major = emulated_npu.npu_moe_finalize_routing(ROWS, None, None, None, SCALES, src_to_dst, None, drop_pad_mode=2)
    assert row_major.tolist() == [[0.5 * 10 + 0.25 * 30], [1 * 20 + 2 * 40]]    # entry i*K + k
    dropped = emulated_npu.npu_moe_finalize_routing(ROWS, None, None, None, SCALES, i32([0, -1, 1, 3]), None)
    assert dropped.tolist() == [[0.5 * 10 + 0.25 * 20], [2 * 40]]              # -1 reads a zero row


def test_finalize_routing_keyword_is_export_for_source_row(emulated_npu):
    import inspect

    params = inspect.signature(emulated_npu.npu_moe_finalize_routing).parameters
    assert "export_for_source_row" in params and "expert_for_source_row" not in params


def test_token_unpermute_documented_formula(emulated_npu):
    sorted_indices = i32([3, 0, 1, 2])   # pair t*K + j -> permuted row
    probs = torch.tensor([[1.0, 10.0], [100.0, 1000.0]])
    out = emulated_npu.npu_moe_token_unpermute(ROWS, sorted_indices, probs)
    assert out.tolist() == [[40 * 1 + 10 * 10], [20 * 100 + 30 * 1000]]
    assert emulated_npu.npu_moe_token_unpermute(ROWS, sorted_indices).tolist() == [[40.0], [10.0], [20.0], [30.0]]
    with pytest.raises(ValueError, match="sorted_indices"):
        emulated_npu.npu_moe_token_unpermute(ROWS, i32([-1, 0, 1, 2]), probs)


def test_routing_v2_then_unpermute_is_a_weighted_round_trip(emulated_npu):
    """init_routing_v2 (gather index) followed by token_unpermute with the same index restores each token,
    scaled by the sum of its probabilities."""
    ids = i32([[0, 3], [2, 0], [1, 1], [3, 2]])
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    expanded_x, expanded_row_idx, _, _ = emulated_npu.npu_moe_init_routing_v2(x, ids, active_num=8, expert_num=4)
    probs = torch.tensor([[0.25, 0.75], [0.5, 0.5], [1.0, 2.0], [0.1, 0.2]])
    out = emulated_npu.npu_moe_token_unpermute(expanded_x, expanded_row_idx, probs)
    torch.testing.assert_close(out, x * probs.sum(1, keepdim=True))


def test_unused_options_are_refused_not_guessed(emulated_npu):
    with pytest.raises(NotImplementedError, match="quant_mode"):
        emulated_npu.npu_moe_init_routing_v2(X, EXPERT_IDX, expert_num=3, quant_mode=1)
    with pytest.raises(NotImplementedError, match="finished"):
        emulated_npu.npu_moe_gating_top_k_softmax(X, torch.zeros(3, dtype=torch.bool), k=1)
    with pytest.raises(TypeError, match="int32"):
        emulated_npu.npu_moe_init_routing(X, ROW_IDX.long(), EXPERT_IDX, 3)
