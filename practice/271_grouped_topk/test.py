"""Tests of exercise 271: grouped top-k routing with a correction bias."""
import math
import random

import pytest
import torch

import submission as sub

P = torch.tensor([[0.9, 0.1, 0.6, 0.5, 0.8, 0.7, 0.2, 0.95]])
LOGITS = torch.log(P / (1 - P))
BIAS = torch.tensor([0., 0.65, 0., 0., 0., 0., 0., 0.])


def route(*args, **kwargs):
    weights, ids = sub.moe_grouped_topk(*args, **kwargs)
    assert isinstance(weights, torch.Tensor) and isinstance(ids, torch.Tensor)
    return weights, ids


def close(got, want, tol=1e-6):
    torch.testing.assert_close(got, torch.as_tensor(want, dtype=torch.float32), atol=tol, rtol=tol)


def test_example_no_bias():
    weights, ids = route(LOGITS, 3, 4, 2, True, "sigmoid")
    assert ids.tolist() == [[7, 0, 6]]
    close(weights, [[0.95 / 2.05, 0.9 / 2.05, 0.2 / 2.05]])


def test_example_with_bias():
    weights, ids = route(LOGITS, 3, 4, 2, True, "sigmoid", BIAS, 2.5)
    assert ids.tolist() == [[0, 4, 1]]
    close(weights, [[0.9 / 1.8 * 2.5, 0.8 / 1.8 * 2.5, 0.1 / 1.8 * 2.5]])


def reference(logits, top_k, groups, topk_group, renormalize, scoring_func, bias, factor):
    """Row by row with Python sorts on the fp32 values."""
    scores = torch.sigmoid(logits.float()) if scoring_func == "sigmoid" else torch.softmax(logits.float(), dim=-1)
    choice = scores if bias is None else scores + bias.float()
    size = logits.shape[1] // groups
    all_w, all_ids = [], []
    for s_row, c_row in zip(scores.tolist(), choice.tolist()):
        def group_score(g):
            members = sorted(c_row[g * size:(g + 1) * size], reverse=True)
            return members[0] if bias is None else float(torch.tensor(members[:2]).sum())   # an fp32 sum
        kept = sorted(range(groups), key=lambda g: (-group_score(g), g))[:topk_group]
        experts = [e for g in kept for e in range(g * size, (g + 1) * size)]
        ids = sorted(experts, key=lambda e: (-c_row[e], e))[:top_k]
        all_ids.append(ids)
        all_w.append([s_row[e] for e in ids])
    weights = torch.tensor(all_w, dtype=torch.float64).reshape(-1, top_k)
    if renormalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return (weights * factor).float(), all_ids


def test_weights_are_the_unbiased_scores():
    # The bias lifts expert 1 into the choice, but its weight is its own small score.
    weights, ids = route(LOGITS, 3, 4, 2, False, "sigmoid", BIAS, 1.0)
    assert ids.tolist() == [[0, 4, 1]]
    close(weights, [[0.9, 0.8, 0.1]])


def test_group_score_with_a_bias_is_the_sum_of_the_best_two():
    # group 0 = [0.9, 0.1] (best 0.9, best two 1.0); group 1 = [0.8, 0.7] (best 0.8, best two 1.5)
    p = torch.tensor([[0.9, 0.1, 0.8, 0.7]])
    logits = torch.log(p / (1 - p))
    _, ids = route(logits, 2, 2, 1, False, "sigmoid", torch.zeros(4))   # a zero bias is still a bias: V3
    assert ids.tolist() == [[2, 3]], "with a bias, the group's score is the sum of its two best choice values"
    _, ids = route(logits, 2, 2, 1, False, "sigmoid")
    assert ids.tolist() == [[0, 1]], "without a bias, the group's score is its best choice value"


def test_group_of_three_sums_only_the_best_two():
    # group 0 = [0.5, 0.5, 0.45] (best two 1.0, all three 1.45); group 1 = [0.9, 0.3, 0.05] (best two 1.2)
    p = torch.tensor([[0.5, 0.5, 0.45, 0.9, 0.3, 0.05]])
    _, ids = route(torch.log(p / (1 - p)), 1, 2, 1, False, "sigmoid", torch.zeros(6))
    assert ids.tolist() == [[3]]


def test_group_of_one_expert_with_a_bias():
    p = torch.tensor([[0.2, 0.9, 0.4, 0.8]])
    bias = torch.tensor([0.0, -0.6, 0.0, 0.0])          # choice = [0.2, 0.3, 0.4, 0.8]
    weights, ids = route(torch.log(p / (1 - p)), 2, 4, 2, False, "sigmoid", bias)
    assert ids.tolist() == [[3, 2]], "a group of one expert scores that expert's own choice value"
    close(weights, [[0.8, 0.4]])


def test_groups_are_consecutive_ids():
    # E = 8, G = 2: groups {0..3} (best 0.9) and {4..7} (best 0.95); with topk_group = 1 only {4..7} stays, so
    # experts 1 and 2 (0.9, 0.85) lose to 4 and 5 (0.05 each).
    p = torch.tensor([[0.1, 0.9, 0.85, 0.8, 0.05, 0.05, 0.05, 0.95]])
    _, ids = route(torch.log(p / (1 - p)), 3, 2, 1, False, "sigmoid")
    assert ids.tolist() == [[7, 4, 5]], "groups are consecutive ids: {0,1,2,3} and {4,5,6,7}"


def test_groups_limit_the_choice():
    # a plain top-3 would take 7, 0, 4; expert 4's group {4,5} loses to group {0,1}
    _, ids = route(LOGITS, 3, 4, 2, False, "sigmoid")
    assert ids.tolist() == [[7, 0, 6]]


def test_softmax_scoring():
    logits = torch.tensor([[2.0, 0.0, 1.0, 0.5, -1.0, 3.0]])
    weights, ids = route(logits, 2, 3, 2, False, "softmax")
    probs = torch.softmax(logits, dim=-1)
    # groups {0,1} {2,3} {4,5}: best 2.0-ish, 1.0-ish, 3.0 -> groups 2 and 0 -> experts 5, 0
    assert ids.tolist() == [[5, 0]]
    close(weights, probs[:, [5, 0]])
    weights, _ = route(logits, 2, 3, 2, False)        # softmax is the default
    close(weights, probs[:, [5, 0]])


def test_sigmoid_scoring_is_not_softmax():
    logits = torch.tensor([[2.0, 0.0, 1.0, 0.5]])
    weights, ids = route(logits, 2, 2, 2, False, "sigmoid")
    assert ids.tolist() == [[0, 2]]
    close(weights, torch.sigmoid(logits[:, [0, 2]]))


def test_scaling_comes_after_renormalising():
    weights, _ = route(LOGITS, 3, 4, 2, True, "sigmoid", BIAS, 2.5)
    close(weights.sum(-1), [2.5])
    weights, _ = route(LOGITS, 3, 4, 2, False, "sigmoid", BIAS, 2.5)
    close(weights, [[0.9 * 2.5, 0.8 * 2.5, 0.1 * 2.5]])


def test_ties_go_to_the_lower_id():
    # all equal: groups 0 and 1, experts 0, 1, 2
    _, ids = route(torch.zeros(2, 8), 3, 4, 2, True, "sigmoid")
    assert ids.tolist() == [[0, 1, 2]] * 2
    _, ids = route(torch.zeros(1, 8), 3, 4, 2, True, "sigmoid", torch.zeros(8))
    assert ids.tolist() == [[0, 1, 2]]
    # groups 1 and 3 tie (same two values, other order); only one group is kept: group 1
    logits = torch.tensor([[-1.0, -1.0, 0.5, 1.5, -1.0, -1.0, 1.5, 0.5]])
    for bias in (None, torch.zeros(8)):
        _, ids = route(logits, 2, 4, 1, False, "sigmoid", bias)
        assert ids.tolist() == [[3, 2]], f"bias={bias}: equal group scores, the lower group id first"
    # experts 2 and 5 tie inside the kept groups
    logits = torch.tensor([[0.0, -2.0, 1.0, -2.0, -2.0, 1.0]])
    _, ids = route(logits, 2, 3, 3, False, "sigmoid")
    assert ids.tolist() == [[2, 5]]


def test_choice_is_ranked_in_fp32():
    # In bf16, sigmoid(2**-8) rounds to sigmoid(0) = 0.5; in fp32 expert 3 is above expert 0.
    logits = torch.zeros(1, 16)
    logits[0, 3], logits[0, 12] = 2 ** -8, 2 ** -7
    logits = logits.bfloat16()
    weights, ids = route(logits, 3, 4, 4, False, "sigmoid")
    assert ids.tolist() == [[12, 3, 0]], f"rank by fp32 scores, logits={logits.float().tolist()}"
    close(weights, torch.sigmoid(logits.float()[:, [12, 3, 0]]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_output_dtypes(dtype):
    logits = torch.randn(5, 16, generator=torch.Generator().manual_seed(1)).to(dtype)
    weights, ids = route(logits, 4, 4, 2, True, "sigmoid", torch.zeros(16), 2.5)
    assert weights.dtype == torch.float32, f"weights must be fp32 for {dtype} logits, got {weights.dtype}"
    assert ids.dtype == torch.int32, f"ids must be int32 for {dtype} logits, got {ids.dtype}"
    assert tuple(weights.shape) == tuple(ids.shape) == (5, 4)
    want_w, want_ids = reference(logits, 4, 4, 2, True, "sigmoid", torch.zeros(16), 2.5)
    assert ids.tolist() == want_ids
    close(weights, want_w)


def test_inputs_are_not_modified():
    logits = torch.randn(4, 8, generator=torch.Generator().manual_seed(2))
    bias = torch.randn(8, generator=torch.Generator().manual_seed(3)) * 0.1
    before = logits.clone(), bias.clone()
    route(logits, 2, 4, 2, True, "sigmoid", bias, 2.5)
    route(logits, 2, 4, 2, True, "softmax")
    assert torch.equal(logits, before[0]) and torch.equal(bias, before[1])


def test_no_tokens():
    for bias in (None, torch.zeros(8)):
        weights, ids = route(torch.zeros(0, 8, dtype=torch.bfloat16), 3, 4, 2, True, "sigmoid", bias, 2.5)
        assert tuple(weights.shape) == tuple(ids.shape) == (0, 3)
        assert weights.dtype == torch.float32 and ids.dtype == torch.int32


@pytest.mark.parametrize("args, kwargs", [
    (((8,), 2, 4, 2), {}),                               # not [T, E]
    (((2, 2, 8), 2, 4, 2), {}),
    (((2, 8), 0, 4, 2), {}),                             # top_k outside [1, E]
    (((2, 8), 9, 4, 2), {}),
    (((2, 8), True, 4, 2), {}),                          # bools are not integers
    (((2, 8), 2.0, 4, 2), {}),
    (((2, 8), 2, 0, 1), {}),                             # num_expert_group not positive
    (((2, 8), 2, True, 1), {}),
    (((2, 8), 2, 4, 0), {}),                             # topk_group not positive
    (((2, 8), 2, 4, True), {}),
    (((2, 8), 2, 3, 2), {}),                             # 3 groups do not divide 8 experts
    (((2, 8), 2, 4, 5), {}),                             # topk_group > num_expert_group
    (((2, 8), 5, 4, 2), {}),                             # 2 groups of 2 hold only 4 experts
    (((2, 8), 2, 4, 2), {"scoring_func": "relu"}),
    (((2, 8), 2, 4, 2), {"e_score_correction_bias": torch.zeros(4)}),
    (((2, 8), 2, 4, 2), {"e_score_correction_bias": torch.zeros(1, 8)}),
    (((0, 8), 5, 4, 2), {}),                             # checked with no tokens too
    (((0, 8), 2, 3, 2), {}),
    (((0, 8), 2, 4, 2), {"scoring_func": "relu"}),
])
def test_bad_input_raises(args, kwargs):
    shape, *rest = args
    repro = f"moe_grouped_topk(torch.zeros{shape}, {', '.join(map(repr, rest))}, renormalize=True, **{kwargs!r})"  # noqa: F841
    with pytest.raises(ValueError):
        sub.moe_grouped_topk(torch.zeros(shape), *rest, renormalize=True, **kwargs)


@pytest.mark.parametrize("seed", range(12))
def test_random_batches(seed):
    rng = random.Random(seed)
    groups = rng.choice([1, 2, 4, 8])
    size = rng.choice([1, 2, 3, 4]) if seed % 3 else rng.choice([2, 4])
    num_experts = groups * size
    topk_group = rng.randint(1, groups)
    top_k = rng.randint(1, topk_group * size)
    scoring = ("sigmoid", "softmax")[seed % 2]
    renormalize = seed % 4 < 2
    factor = rng.choice([1.0, 2.5, 16.0])
    tokens = rng.randint(1, 9)
    dtype = (torch.float32, torch.bfloat16, torch.float16)[seed % 3]
    g = torch.Generator().manual_seed(seed)
    # Coarse logits make equal values (ties) common.
    logits = (torch.randint(-3, 4, (tokens, num_experts), generator=g) / 2 if seed % 2 else
              torch.randn(tokens, num_experts, generator=g) * 2).to(dtype)
    bias = None if seed % 3 == 0 and size > 1 else (torch.randint(-2, 3, (num_experts,), generator=g) / 8)
    if bias is None and size == 1:
        bias = torch.zeros(num_experts)
    repro = {"router_logits": logits, "top_k": top_k, "num_expert_group": groups, "topk_group": topk_group,  # noqa: F841
             "renormalize": renormalize, "scoring_func": scoring, "e_score_correction_bias": bias,
             "routed_scaling_factor": factor}
    weights, ids = route(logits, top_k, groups, topk_group, renormalize, scoring, bias, factor)
    want_w, want_ids = reference(logits, top_k, groups, topk_group, renormalize, scoring, bias, factor)
    assert ids.tolist() == want_ids
    close(weights, want_w, 1e-5 * max(1.0, factor))
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
