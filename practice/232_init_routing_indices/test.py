"""Tests of exercise 232: npu_moe_init_routing (v1, column-major j*N+t) and npu_moe_init_routing_v2 (token-major t*K+j)."""
import random

import pytest
import torch

import submission as sub

EXAMPLE = [[2, 0], [1, 2], [0, 1]]


def tokens(n, h=3):
    """x[t] = t + 1 everywhere, so a gathered row names its token."""
    return (torch.arange(n, dtype=torch.float32) + 1).unsqueeze(1).repeat(1, h)


def ids(rows):
    return torch.tensor(rows, dtype=torch.int32)


def vllm_ascend_row_idx(n, k):
    """row_idx[t][j] = j*N + t, as vllm-ascend v0.9.1 builds it."""
    return torch.arange(n * k, dtype=torch.int32).view(k, n).T.contiguous()


def v1(topk_ids, active_num=None):
    expert_idx = ids(topk_ids)
    n, k = expert_idx.shape
    out = sub.npu_moe_init_routing(tokens(n), vllm_ascend_row_idx(n, k), expert_idx, n if active_num is None else active_num)
    assert out[1].dtype == torch.int32 and out[2].dtype == torch.int32
    return out


def gathered(expanded_x):
    """Which token each row of expanded_x came from (0 for a zero row)."""
    return (expanded_x[:, 0] - 1).long().clamp(min=-1).tolist()


def test_example_v1():
    expanded_x, row_idx, experts = v1(EXAMPLE)
    assert gathered(expanded_x) == [0, 2, 1, 2, 0, 1]
    assert row_idx.tolist() == [4, 2, 1, 0, 5, 3] and experts.tolist() == [0, 0, 1, 1, 2, 2]


def test_v1_torch_npu_documentation_case():
    # torch_npu.npu_moe_init_routing's call example: expert_idx [[1, 2], [0, 1], [0, 2]], run through the doc's numpy reference
    expanded_x, row_idx, experts = v1([[1, 2], [0, 1], [0, 2]])
    assert gathered(expanded_x) == [1, 2, 0, 1, 0, 2] and row_idx.tolist() == [2, 0, 1, 4, 3, 5]


def test_v1_active_num_keeps_the_first_rows():
    expanded_x, row_idx, _ = v1(EXAMPLE, active_num=2)
    assert gathered(expanded_x) == [0, 2, 1, 2] and row_idx.tolist() == [4, 2, 1, 0, 5, 3]


def test_v1_reads_its_index_from_row_idx():
    # A row-major row_idx (t*K + j) instead of vllm-ascend's: the index and the gather follow the formulas
    # literally, expanded_row_idx[src[d]] = d and expanded_x = x[src % N].
    row_major = torch.arange(6, dtype=torch.int32).view(3, 2)
    expanded_x, row_idx, experts = sub.npu_moe_init_routing(tokens(3), row_major, ids(EXAMPLE), 3)
    assert row_idx.tolist() == [4, 0, 2, 5, 1, 3], "expanded_row_idx is indexed by the row_idx numbers"
    assert gathered(expanded_x) == [1, 1, 2, 2, 0, 0], "expanded_x = x[src % N], src = row_idx numbers in sorted order"
    assert experts.tolist() == [0, 0, 1, 1, 2, 2]


def test_v1_active_num_zero_keeps_no_rows_and_x_keeps_its_dtype():
    expanded_x, row_idx, _ = v1(EXAMPLE, active_num=0)
    assert tuple(expanded_x.shape) == (0, 3), f"min(0, N) * K = 0 rows, got shape {tuple(expanded_x.shape)}"
    assert row_idx.tolist() == [4, 2, 1, 0, 5, 3]
    x = tokens(3).bfloat16()
    expanded_x = sub.npu_moe_init_routing(x, vllm_ascend_row_idx(3, 2), ids(EXAMPLE), 3)[0]
    assert expanded_x.dtype == torch.bfloat16, f"expanded_x holds rows of x (bf16), got {expanded_x.dtype}"


def v2(topk_ids, expert_num, x=None, **options):
    expert_idx = ids(topk_ids) if topk_ids else torch.zeros(0, 2, dtype=torch.int32)
    n, k = expert_idx.shape
    options = {"expert_tokens_num_type": 1, "expert_tokens_num_flag": True, "active_num": n * k, **options}
    x = tokens(n) if x is None else x
    out = sub.npu_moe_init_routing_v2(x, expert_idx, expert_num=expert_num, **options)
    assert len(out) == 4 and out[1].dtype == torch.int32 and out[2].dtype == torch.int64
    assert out[0].dtype == x.dtype, f"expanded_x holds rows of x ({x.dtype}), got {out[0].dtype}"
    scale = out[3]
    assert isinstance(scale, torch.Tensor) and scale.dtype == torch.float32 and not scale.any(), \
        f"expanded_scale without a scale: fp32 zeros, got {scale!r}"
    return out


def test_example_v2():
    expanded_x, row_idx, counts, _ = v2(EXAMPLE, 3)
    assert gathered(expanded_x) == [0, 2, 1, 2, 0, 1]
    assert row_idx.tolist() == [4, 0, 2, 5, 1, 3] and counts.tolist() == [2, 2, 2]


def test_example_v2_active_range():
    expanded_x, row_idx, counts, _ = v2(EXAMPLE, 3, active_expert_range=[1, 3])
    assert gathered(expanded_x) == [1, 2, 0, 1, -1, -1]          # two rows past the valid ones: zeros
    assert row_idx.tolist() == [2, -1, 0, 3, -1, 1] and counts.tolist() == [2, 2]


def test_v2_cumsum_counts_flag_and_idle_experts():
    assert v2([[3, 0], [3, 0]], 6)[2].tolist() == [2, 0, 0, 2, 0, 0]
    assert v2([[3, 0], [3, 0]], 6, active_expert_range=[2, 5])[2].tolist() == [0, 2, 0]
    assert v2([[3, 0], [3, 0]], 6, expert_tokens_num_type=0)[2].tolist() == [2, 2, 2, 4, 4, 4]
    # the cumsum of the range's own counts [0, 2, 0], not a cut of the cumsum over all experts
    assert v2([[3, 0], [3, 0]], 6, expert_tokens_num_type=0, active_expert_range=[2, 5])[2].tolist() == [0, 2, 2]
    assert v2([[3, 0], [3, 0]], 6, expert_tokens_num_flag=False)[2].numel() == 0


def test_v2_active_num_and_default_rows():
    expanded_x, row_idx, counts, _ = v2(EXAMPLE, 3, active_num=4)
    assert expanded_x.shape == (4, 3) and gathered(expanded_x) == [0, 2, 1, 2]
    # every pair in range keeps its sorted row in expanded_row_idx, also those past active_num's rows
    assert row_idx.tolist() == [4, 0, 2, 5, 1, 3] and counts.tolist() == [2, 2, 2]
    assert v2(EXAMPLE, 3, active_num=-1)[0].shape == (6, 3)
    assert v2(EXAMPLE, 3, active_num=0)[0].shape == (6, 3)
    assert v2(EXAMPLE, 3, active_num=100)[0].shape == (6, 3), "min(active_num, N*K) rows"


def test_v2_keeps_the_dtype_of_x():
    expanded_x = v2(EXAMPLE, 3, x=tokens(3).bfloat16(), active_expert_range=[1, 3])[0]
    assert gathered(expanded_x.float()) == [1, 2, 0, 1, -1, -1]


def test_v2_no_tokens():
    expanded_x, row_idx, counts, _ = v2([], 4, active_expert_range=[1, 3])
    assert tuple(expanded_x.shape) == (0, 3) and row_idx.numel() == 0 and counts.tolist() == [0, 0]
    with pytest.raises(ValueError):
        v2([], 4, active_expert_range=[3, 1])
    with pytest.raises(ValueError):
        v2([], 4, active_expert_range=[0, 5])


@pytest.mark.parametrize("call", [
    lambda: sub.npu_moe_init_routing(tokens(2), vllm_ascend_row_idx(2, 2), ids([[0, 1], [1, 0], [0, 1]]), 2),
    lambda: sub.npu_moe_init_routing(tokens(1), vllm_ascend_row_idx(1, 1), ids([[0, 1]]), 1),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, 3]]), expert_num=3),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, -1]]), expert_num=3),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, 1]]), expert_num=3, active_expert_range=[2, 1]),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, 1]]), expert_num=3, active_expert_range=[1, 4]),
    lambda: sub.npu_moe_init_routing_v2(tokens(2), ids([[0, 1]]), expert_num=3),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, 1]]), expert_num=3, active_expert_range=[-1, 2]),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, 3]]), expert_num=3, active_expert_range=[0, 2]),
    lambda: sub.npu_moe_init_routing_v2(tokens(1), ids([[0, 1]])),                 # expert_num left at -1
    lambda: sub.npu_moe_init_routing(tokens(2)[:, 0], vllm_ascend_row_idx(2, 1), ids([[0], [1]]), 2),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


def test_int64_ids_are_refused():
    with pytest.raises(TypeError):
        sub.npu_moe_init_routing_v2(tokens(1), torch.tensor([[0, 1]]), expert_num=3)
    with pytest.raises(TypeError):
        sub.npu_moe_init_routing(tokens(1), vllm_ascend_row_idx(1, 2), torch.tensor([[0, 1]]), 1)
    with pytest.raises(TypeError):
        sub.npu_moe_init_routing(tokens(1), vllm_ascend_row_idx(1, 2).long(), ids([[0, 1]]), 1)


def random_routing(seed):
    rng = random.Random(seed)
    num_experts = rng.choice([2, 4, 5, 8])
    k = rng.randint(1, min(4, num_experts))
    topk_ids = [rng.sample(range(num_experts), k) for _ in range(rng.randint(1, 9))]
    return rng, num_experts, k, topk_ids


@pytest.mark.parametrize("seed", range(10))
def test_random_v1(seed):
    _, num_experts, k, topk_ids = random_routing(seed)
    n = len(topk_ids)
    pairs = sorted((topk_ids[t][j], t, j) for t in range(n) for j in range(k))   # by expert, then token
    expanded_x, row_idx, experts = v1(topk_ids)
    assert experts.tolist() == [e for e, _, _ in pairs] and gathered(expanded_x) == [t for _, t, _ in pairs]
    assert row_idx.tolist() == [dict(((j * n + t), d) for d, (_, t, j) in enumerate(pairs))[i] for i in range(n * k)]


@pytest.mark.parametrize("seed", range(10))
def test_random_v2_and_its_relation_to_v1(seed):
    rng, num_experts, k, topk_ids = random_routing(seed)
    n = len(topk_ids)
    start = rng.randint(0, num_experts - 1)
    end = rng.randint(start + 1, num_experts)
    pairs = sorted((topk_ids[t][j], t, j) for t in range(n) for j in range(k) if start <= topk_ids[t][j] < end)
    expanded_x, row_idx, counts, _ = v2(topk_ids, num_experts, active_expert_range=[start, end])
    assert gathered(expanded_x) == [t for _, t, _ in pairs] + [-1] * (n * k - len(pairs))
    where = {(t * k + j): d for d, (_, t, j) in enumerate(pairs)}
    assert row_idx.tolist() == [where.get(i, -1) for i in range(n * k)]
    assert counts.tolist() == [sum(1 for e, _, _ in pairs if e == x) for x in range(start, end)]
    full_x, full, _, _ = v2(topk_ids, num_experts)
    v1_x, v1_idx, _ = v1(topk_ids)
    assert torch.equal(full_x, v1_x)
    assert all(full[t * k + j] == v1_idx[j * n + t] for t in range(n) for j in range(k))
