"""Tests of exercise 237: the grouped GEMM kernel, through the complete host code.

Without a GPU the kernel runs in the Triton interpreter; TRITON_INTERPRET must be set before the
submission's @triton.jit runs, hence before the import below.
"""
import os

if not os.path.exists("/dev/nvidia0"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from submission import grouped_gemm  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"


def run(a, b, ids, weights=None, expert_map=None, **kwargs):
    """grouped_gemm on DEVICE (the GPU when there is one, else the CPU under the interpreter); result on the CPU."""
    moved = [None if t is None else t.to(DEVICE) for t in (a, b, ids, weights, expert_map)]
    return grouped_gemm(*moved, **kwargs).cpu()


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
    torch.testing.assert_close(run(a, b, ids), torch.tensor([[2., 4.], [3., 4.]]))
    torch.testing.assert_close(run(a, b, ids, torch.tensor([[0.5], [1.0]])), torch.tensor([[1., 2.], [3., 4.]]))


def random_case(seed, tokens, top_k, num_experts, hidden, n, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(tokens, hidden, generator=g).to(dtype)
    b = (torch.randn(num_experts, n, hidden, generator=g) / hidden ** 0.5).to(dtype)
    popular = torch.randperm(num_experts, generator=g)[:max(top_k, num_experts // 2)]   # some experts stay idle
    ids = torch.stack([popular[torch.randperm(len(popular), generator=g)[:top_k]] for _ in range(tokens)]).to(torch.int32)
    weights = torch.rand(tokens, top_k, generator=g)
    return a, b, ids, weights


@pytest.mark.parametrize("seed, tokens, top_k, num_experts, hidden, n, block_m", [
    (0, 5, 2, 4, 16, 16, 16),      # whole blocks in K and N
    (1, 9, 2, 6, 20, 24, 16),      # K and N not multiples of 16: masks
    (2, 12, 3, 8, 37, 40, 32),     # three choices per token, BLOCK_M 32
    (3, 1, 1, 3, 8, 5, 16),        # one token, tiny shapes
])
def test_random_weighted(seed, tokens, top_k, num_experts, hidden, n, block_m):
    a, b, ids, weights = random_case(seed, tokens, top_k, num_experts, hidden, n)
    got = run(a, b, ids, weights, block_m=block_m)
    torch.testing.assert_close(got.double(), reference(a, b, ids, weights), atol=1e-5, rtol=1e-5)


def test_unweighted():
    a, b, ids, _ = random_case(4, 7, 2, 5, 24, 20)
    torch.testing.assert_close(run(a, b, ids).double(), reference(a, b, ids), atol=1e-5, rtol=1e-5)


def test_expert_map_zeros_for_experts_elsewhere():
    a, b, ids, weights = random_case(5, 8, 2, 6, 20, 18)
    expert_map = torch.tensor([-1, 0, -1, 1, 2, -1], dtype=torch.int32)
    local_b = b[[1, 3, 4]]
    got = run(a, local_b, ids, weights, expert_map)
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got.double(), reference(a, local_b, ids, weights, expert_map), atol=1e-5, rtol=1e-5)


def test_bf16_upcast():
    a, b, ids, weights = random_case(6, 6, 2, 4, 32, 32, dtype=torch.bfloat16)
    got = run(a, b, ids, weights)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.double(), reference(a, b, ids, weights), atol=2e-2, rtol=2e-2)
