"""Tests of exercise 236: npu_moe_finalize_routing."""
import pytest
import torch

import submission as sub

ROWS = torch.tensor([[1., 0.], [0., 1.], [2., 2.], [10., 0.]])
SRC_TO_DST = torch.tensor([2, 0, 3, 1], dtype=torch.int32)
SCALES = torch.tensor([[0.5, 0.5], [1.0, 0.25]])
SKIP1 = torch.tensor([[100., 100.], [0., 0.]])


def test_example_column_major():
    out = sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=0)
    torch.testing.assert_close(out, torch.tensor([[106., 101.], [1., 0.25]]))


def test_example_row_major():
    out = sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=2)
    torch.testing.assert_close(out, torch.tensor([[101.5, 101.], [10., 0.25]]))


def test_bias_is_per_expert_and_weighted():
    bias = torch.tensor([[0., 0.], [1000., 0.], [0., 3000.]])
    experts = torch.tensor([[1, 2], [2, 0]], dtype=torch.int32)
    out = sub.npu_moe_finalize_routing(ROWS, None, None, bias, SCALES, SRC_TO_DST, experts)
    # i=0: 0.5*([2,2]+[1000,0]) + 0.5*([10,0]+[0,3000]); i=1: 1.0*([1,0]+[0,3000]) + 0.25*([0,1]+[0,0])
    torch.testing.assert_close(out, torch.tensor([[506., 1501.], [1., 3000.25]]))


def test_two_skips_and_no_scales():
    skip2 = torch.tensor([[1., 2.], [3., 4.]])
    out = sub.npu_moe_finalize_routing(ROWS, SKIP1, skip2, None, None, SRC_TO_DST, None, drop_pad_mode=0, k=2)
    torch.testing.assert_close(out, torch.tensor([[113., 104.], [4., 5.]]))
    out = sub.npu_moe_finalize_routing(ROWS, None, None, None, None, SRC_TO_DST, None, drop_pad_mode=0, k=1)
    torch.testing.assert_close(out, ROWS[[2, 0, 3, 1]])


def test_dtype_follows_rows():
    out = sub.npu_moe_finalize_routing(ROWS.bfloat16(), SKIP1.bfloat16(), None, None, SCALES.bfloat16(), SRC_TO_DST, None)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), torch.tensor([[106., 101.], [1., 0.25]]))


@pytest.mark.parametrize("mode", [0, 2])
def test_bf16_is_summed_in_fp32(mode):
    # K = 4 choices and two skips in bf16: summed in fp32 and rounded once, each entry is within one unit in the
    # last place of the exact result in bf16; bf16 arithmetic (or a second rounding) is further off.
    g = torch.Generator().manual_seed(mode)
    n, k, h = 6, 4, 16
    rows = torch.randn(n * k, h, generator=g).bfloat16()
    scales = torch.rand(n, k, generator=g).bfloat16()
    skip1, skip2 = torch.randn(n, h, generator=g).bfloat16(), torch.randn(n, h, generator=g).bfloat16()
    src_to_dst = torch.randperm(n * k, generator=g).to(torch.int32)
    out = sub.npu_moe_finalize_routing(rows, skip1, skip2, None, scales, src_to_dst, None, drop_pad_mode=mode)
    assert out.dtype == torch.bfloat16
    index = src_to_dst.long().view(k, n).T if mode == 0 else src_to_dst.long().view(n, k)
    exact = skip1.double() + skip2.double() + (rows.double()[index] * scales.double()[..., None]).sum(1)
    torch.testing.assert_close(out.double(), exact.bfloat16().double(), rtol=torch.finfo(torch.bfloat16).eps, atol=1e-6,
                               msg=lambda m: f"seed={mode}, drop_pad_mode={mode}: summed in fp32?\n{m}")


def test_k_counts_only_without_scales():
    out = sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=0, k=4)
    torch.testing.assert_close(out, torch.tensor([[106., 101.], [1., 0.25]]), msg="K = scales.shape[1] = 2, not k=4")


def test_modes_1_and_3_index_like_0_and_2():
    for mode, like in ((1, 0), (3, 2)):
        torch.testing.assert_close(
            sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=mode),
            sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=like))


def test_dropped_pair_adds_nothing():
    # (i=1, k=1) was dropped (-1): only its other choice counts, and no row is read for it
    src_to_dst = torch.tensor([2, 0, 3, -1], dtype=torch.int32)
    out = sub.npu_moe_finalize_routing(ROWS, None, None, None, SCALES, src_to_dst, None, drop_pad_mode=0)
    torch.testing.assert_close(out, torch.tensor([[6., 1.], [1., 0.]]))
    # row-major too: (i=1, k=0) dropped in mode 2
    src_to_dst = torch.tensor([2, 0, -1, 1], dtype=torch.int32)
    out = sub.npu_moe_finalize_routing(ROWS, None, None, None, SCALES, src_to_dst, None, drop_pad_mode=2)
    torch.testing.assert_close(out, torch.tensor([[1.5, 1.], [0., 0.25]]), msg="drop_pad_mode=2, src_to_dst=[2, 0, -1, 1]")


def test_bad_input_raises():
    with pytest.raises(ValueError):
        sub.npu_moe_finalize_routing(ROWS, None, SKIP1, None, SCALES, SRC_TO_DST, None)
    with pytest.raises(ValueError):
        sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=4)
    with pytest.raises(ValueError):
        sub.npu_moe_finalize_routing(ROWS, SKIP1, None, None, SCALES, SRC_TO_DST, None, drop_pad_mode=-1)
    with pytest.raises(ValueError):   # 4 entries with K = scales.shape[1] = 3
        sub.npu_moe_finalize_routing(ROWS, None, None, None, torch.ones(1, 3), SRC_TO_DST, None)
    with pytest.raises(ValueError):
        sub.npu_moe_finalize_routing(ROWS, None, None, None, None, torch.tensor([0, 1, 2], dtype=torch.int32), None, k=2)
    with pytest.raises(ValueError):
        sub.npu_moe_finalize_routing(ROWS, SKIP1, None, torch.zeros(3, 2), SCALES, SRC_TO_DST, None)


def init_routing_v1(topk_ids):
    """The documented numpy reference of npu_moe_init_routing, with vllm-ascend's row_idx (j*N+t)."""
    n, k = topk_ids.shape
    row_idx = torch.arange(n * k).view(k, n).T.reshape(-1)
    order = torch.argsort(topk_ids.reshape(-1), stable=True)
    dst_to_src = row_idx[order]
    expanded_row_idx = torch.empty(n * k, dtype=torch.int32)
    expanded_row_idx[dst_to_src] = torch.arange(n * k, dtype=torch.int32)
    return dst_to_src % n, expanded_row_idx


@pytest.mark.parametrize("seed", range(5))
def test_round_trip_with_init_routing(seed):
    g = torch.Generator().manual_seed(seed)
    n, k, num_experts, h = [(5, 2, 4, 8), (9, 3, 6, 4), (1, 1, 2, 3), (12, 2, 8, 16), (7, 4, 4, 5)][seed]
    x = torch.randn(n, h, generator=g)
    topk_ids = torch.stack([torch.randperm(num_experts, generator=g)[:k] for _ in range(n)]).to(torch.int32)
    scales = torch.rand(n, k, generator=g)
    scale_per_expert = torch.randn(num_experts, h, generator=g)           # each "expert" scales its row
    bias = torch.randn(num_experts, h, generator=g)
    skip = torch.randn(n, h, generator=g)
    gather, expanded_row_idx = init_routing_v1(topk_ids)
    sorted_experts = torch.sort(topk_ids.reshape(-1), stable=True).values
    rows = x[gather] * scale_per_expert[sorted_experts.long()]
    expected = skip.clone()
    for i in range(n):
        for j in range(k):
            e = int(topk_ids[i, j])
            expected[i] += scales[i, j] * (x[i] * scale_per_expert[e] + bias[e])
    out = sub.npu_moe_finalize_routing(rows, skip, None, bias, scales, expanded_row_idx, topk_ids, drop_pad_mode=0)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    # the same rows, addressed token-major, with drop_pad_mode=2
    token_major = expanded_row_idx.view(k, n).T.reshape(-1)
    out2 = sub.npu_moe_finalize_routing(rows, skip, None, bias, scales, token_major, topk_ids, drop_pad_mode=2)
    torch.testing.assert_close(out2, expected, atol=1e-5, rtol=1e-5)
