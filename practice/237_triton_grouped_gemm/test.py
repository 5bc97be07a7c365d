"""Tests of exercise 237: the grouped GEMM kernel, launched by the engine's own host code with the
submission's kernel put in the engine's place (as practice/judge.py engine does).

Without a GPU the kernel runs in the Triton interpreter; TRITON_INTERPRET must be set before the
submission's @triton.jit runs, hence before the import below.
"""
import os

if not os.path.exists("/dev/nvidia0"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

import submission as sub  # noqa: E402
from mini_platform.ops.cpu import moe as cpu_moe  # noqa: E402
from mini_platform.ops.triton import moe  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"


@pytest.fixture(autouse=True)
def learners_kernel(monkeypatch):
    monkeypatch.setattr(moe, "fused_moe_kernel", sub.fused_moe_kernel)


def grouped_gemm(a, b, topk_ids, topk_weights=None, expert_map=None, block_m=16, block_n=16, block_k=16, group_m=1,
                 num_post=None):
    """c [T*K, N] (NaN where nothing was written): row t*K+j = (w *) a[t] @ b[local expert]^T, on DEVICE."""
    a, b, topk_ids = a.to(DEVICE), b.contiguous().to(DEVICE), topk_ids.to(DEVICE)
    num_tokens, top_k = topk_ids.shape
    num_experts = b.shape[0] if expert_map is None else expert_map.numel()
    emap = None if expert_map is None else expert_map.to(DEVICE)
    sorted_ids, expert_ids, post = moe.moe_align_block_size(topk_ids, block_m, num_experts, emap)
    if num_post is not None:
        post = torch.tensor([num_post], dtype=torch.int32, device=DEVICE)
    c = torch.full((num_tokens * top_k, b.shape[1]), float("nan"), dtype=a.dtype, device=DEVICE)
    weights = (topk_weights if topk_weights is not None else torch.ones(num_tokens, top_k)).float().contiguous()
    config = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": group_m}
    moe.invoke_fused_moe_kernel(a, b, c, weights.to(DEVICE), sorted_ids, expert_ids, post, top_k,
                                topk_weights is not None, config)
    return c.cpu()


def reference(a, b, topk_ids, topk_weights=None, expert_map=None):
    """Row t*K+j = (w *) a[t] @ b[local]^T in float64; zeros for experts owned elsewhere."""
    t_count, top_k = topk_ids.shape
    out = torch.zeros(t_count * top_k, b.shape[1], dtype=torch.float64)
    for t in range(t_count):
        for j in range(top_k):
            e = int(topk_ids[t, j]) if expert_map is None else int(expert_map[int(topk_ids[t, j])])
            if e >= 0:
                w = 1.0 if topk_weights is None else float(topk_weights[t, j])
                out[t * top_k + j] = w * (b[e].double() @ a[t].double())
    return out


def test_example():
    a = torch.tensor([[1., 2.], [3., 4.]])
    b = torch.stack([torch.eye(2), 2 * torch.eye(2)])            # expert 0: identity, expert 1: doubles
    ids = torch.tensor([[1], [0]], dtype=torch.int32)
    torch.testing.assert_close(grouped_gemm(a, b, ids), torch.tensor([[2., 4.], [3., 4.]]))
    torch.testing.assert_close(grouped_gemm(a, b, ids, torch.tensor([[0.5], [1.0]])), torch.tensor([[1., 2.], [3., 4.]]))


def random_case(seed, tokens, top_k, num_experts, hidden, n, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(tokens, hidden, generator=g).to(dtype)
    b = (torch.randn(num_experts, n, hidden, generator=g) / hidden ** 0.5).to(dtype)
    popular = torch.randperm(num_experts, generator=g)[:max(top_k, num_experts // 2)]   # some experts stay idle
    ids = torch.stack([popular[torch.randperm(len(popular), generator=g)[:top_k]] for _ in range(tokens)]).to(torch.int32)
    weights = torch.rand(tokens, top_k, generator=g)
    return a, b, ids, weights


@pytest.mark.parametrize("seed, tokens, top_k, num_experts, hidden, n, block_m, group_m", [
    (0, 5, 2, 4, 16, 16, 16, 1),      # whole blocks in K and N
    (1, 9, 2, 6, 20, 40, 16, 1),      # K and N not multiples of 16: masks; three column blocks
    (2, 12, 3, 8, 37, 40, 32, 8),     # three choices per token, BLOCK_M 32, grouped ordering
    (3, 1, 1, 3, 8, 5, 16, 4),        # one token, tiny shapes
])
def test_random_weighted(seed, tokens, top_k, num_experts, hidden, n, block_m, group_m):
    a, b, ids, weights = random_case(seed, tokens, top_k, num_experts, hidden, n)
    got = grouped_gemm(a, b, ids, weights, block_m=block_m, group_m=group_m)
    torch.testing.assert_close(got.double(), reference(a, b, ids, weights), atol=1e-5, rtol=1e-5)


def test_unweighted_with_two_k_blocks():
    a, b, ids, _ = random_case(4, 7, 2, 5, 24, 20)
    torch.testing.assert_close(grouped_gemm(a, b, ids, block_k=8).double(), reference(a, b, ids), atol=1e-5, rtol=1e-5)


def test_expert_map_zeros_for_experts_elsewhere():
    a, b, ids, weights = random_case(5, 8, 2, 6, 20, 18)
    expert_map = torch.tensor([-1, 0, -1, 1, 2, -1], dtype=torch.int32)
    local_b = b[[1, 3, 4]]
    got = grouped_gemm(a, local_b, ids, weights, expert_map)
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got.double(), reference(a, local_b, ids, weights, expert_map), atol=1e-5, rtol=1e-5)


def test_blocks_past_num_tokens_post_padded_write_nothing():
    # expert 0 fills block 0 exactly, expert 1 block 1; told that only one block is used, block 1 stays unwritten
    a = torch.arange(8.).view(4, 2)
    b = torch.stack([torch.eye(2), torch.eye(2)])
    ids = torch.tensor([[0], [0], [1], [1]], dtype=torch.int32)
    got = grouped_gemm(a, b, ids, block_m=2, num_post=2)
    torch.testing.assert_close(got[:2], a[:2])
    assert torch.isnan(got[2:]).all()


def test_last_group_of_m_blocks_only_partly_filled():
    # 4 used M-blocks (5 in the buffer) and 3 column blocks with GROUP_M = 3: the second group holds only 2 blocks
    g = torch.Generator().manual_seed(8)
    a = torch.randn(40, 8, generator=g)
    b = torch.randn(2, 40, 8, generator=g)
    ids = torch.tensor([[t % 2] for t in range(40)], dtype=torch.int32)
    got = grouped_gemm(a, b, ids, block_m=16, block_n=16, block_k=16, group_m=3)
    assert not torch.isnan(got).any(), f"tiles left unwritten at rows {torch.isnan(got).any(1).nonzero().flatten().tolist()}"
    torch.testing.assert_close(got.double(), reference(a, b, ids), atol=1e-5, rtol=1e-5)


def launch(a, b, c, topk_ids, topk_weights):
    """invoke_fused_moe_kernel on the tensors as given (any strides); c is written in place."""
    sorted_ids, expert_ids, post = moe.moe_align_block_size(topk_ids.to(DEVICE), 16, b.shape[0])
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1}
    moe.invoke_fused_moe_kernel(a, b, c, topk_weights.float().contiguous().to(DEVICE), sorted_ids, expert_ids, post,
                                topk_ids.shape[1], True, config)


def test_addresses_use_the_strides():
    # a: every other column of a wider tensor; b: the first K columns of a wider [E, N, 2K]; c: a column slice
    a0, b0, ids, weights = random_case(9, 6, 2, 4, 40, 20)
    a = torch.randn(6, 80, generator=torch.Generator().manual_seed(9)).to(DEVICE)[:, ::2]
    a.copy_(a0.to(DEVICE))
    b = torch.zeros(4, 20, 80, device=DEVICE)[:, :, :40]
    b.copy_(b0.to(DEVICE))
    wide = torch.full((12, 27), float("nan"), device=DEVICE)
    c = wide[:, 3:23]
    assert not (a.is_contiguous() or b.is_contiguous() or c.is_contiguous()), "the test's own premise"
    launch(a, b, c, ids, weights)
    torch.testing.assert_close(c.cpu().double(), reference(a0, b0, ids, weights), atol=1e-5, rtol=1e-5,
                               msg=lambda m: f"strides a {a.stride()}, b {b.stride()}, c {c.stride()}\n{m}")
    assert torch.isnan(wide[:, :3]).all() and torch.isnan(wide[:, 23:]).all(), "wrote outside c's columns"


def test_bf16_inputs_into_an_fp32_output():
    # the second GEMM of the layer: bf16 activations and weights, an fp32 c; the store is in c's dtype, unrounded
    a, b, ids, weights = random_case(10, 6, 2, 4, 32, 24, dtype=torch.bfloat16)
    c = torch.full((12, 24), float("nan"), dtype=torch.float32, device=DEVICE)
    launch(a.to(DEVICE), b.to(DEVICE), c, ids, weights)
    torch.testing.assert_close(c.cpu().double(), reference(a, b, ids, weights), atol=1e-5, rtol=1e-5,
                               msg=lambda m: f"bf16 a and b, fp32 c: rounded to bf16 before the store?\n{m}")


def test_the_plain_dot_branch():
    # DOT_IN_FP32=False is the GPU path for bf16/fp16; launched directly here on fp32 data with three K blocks
    # (the interpreter's bf16 arithmetic is unreliable; on a GPU this dot may use TF32, hence the tolerance)
    a, b, ids, weights = random_case(11, 6, 2, 3, 40, 20)
    sorted_ids, expert_ids, post = moe.moe_align_block_size(ids.to(DEVICE), 16, 3)
    c = torch.full((12, 20), float("nan"), device=DEVICE)
    a, b, flat_weights = a.to(DEVICE), b.to(DEVICE), weights.to(DEVICE).contiguous()
    grid = (triton.cdiv(sorted_ids.shape[0], 16) * triton.cdiv(20, 16),)
    sub.fused_moe_kernel[grid](a, b, c, flat_weights, sorted_ids, expert_ids, post, 20, 40, sorted_ids.shape[0], 12,
                               a.stride(0), a.stride(1), b.stride(0), b.stride(1), b.stride(2), c.stride(0), c.stride(1),
                               TOP_K=2, MUL_ROUTED_WEIGHT=True, DOT_IN_FP32=False,
                               BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=1)
    torch.testing.assert_close(c.cpu().double(), reference(a.cpu(), b.cpu(), ids, weights), atol=2e-2, rtol=2e-2,
                               msg=lambda m: f"DOT_IN_FP32=False, K=40 in BLOCK_K=16 steps\n{m}")


def test_bf16_in_and_out():
    a, b, ids, weights = random_case(6, 6, 2, 4, 32, 32, dtype=torch.bfloat16)
    got = grouped_gemm(a, b, ids, weights)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.double(), reference(a, b, ids, weights), atol=2e-2, rtol=2e-2)


def test_the_triton_fused_experts_equals_the_specification():
    # the whole Triton MoE (two launches, SwiGLU between them) against the CPU expert loop
    g = torch.Generator().manual_seed(7)
    hidden, inter, num_experts, tokens, top_k = 16, 24, 4, 6, 2
    x = torch.randn(tokens, hidden, generator=g)
    w13 = torch.randn(num_experts, 2 * inter, hidden, generator=g) / hidden ** 0.5
    w2 = torch.randn(num_experts, hidden, inter, generator=g) / inter ** 0.5
    weights, ids = cpu_moe.moe_topk_softmax(torch.randn(tokens, num_experts, generator=g), top_k, True)
    got = moe.fused_experts(x.to(DEVICE), w13.to(DEVICE), w2.to(DEVICE), weights.to(DEVICE), ids.to(DEVICE)).cpu()
    torch.testing.assert_close(got, cpu_moe.fused_experts(x, w13, w2, weights, ids), atol=1e-5, rtol=1e-5)
