"""Tests of exercise 230: the MoE routing kernel moe_topk_softmax."""
import math
import random

import pytest
import torch

import submission as sub

EXAMPLE = torch.tensor([[0.0, math.log(3.0), 0.0, math.log(4.0)], [1.0, 1.0, 1.0, 1.0]])


def route(logits, top_k, renormalize):
    weights, ids = sub.moe_topk_softmax(logits, top_k, renormalize)
    assert isinstance(weights, torch.Tensor) and isinstance(ids, torch.Tensor)
    return weights, ids


def close(got, want, tol=1e-6):
    torch.testing.assert_close(got, torch.as_tensor(want, dtype=torch.float32), atol=tol, rtol=tol)


def test_example_plain():
    weights, ids = route(EXAMPLE, 2, False)
    assert ids.tolist() == [[3, 1], [0, 1]]
    close(weights, [[4 / 9, 3 / 9], [0.25, 0.25]])


def test_example_renormalized():
    weights, ids = route(EXAMPLE, 2, True)
    assert ids.tolist() == [[3, 1], [0, 1]]
    close(weights, [[4 / 7, 3 / 7], [0.5, 0.5]])


def test_output_dtypes_and_shapes():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        weights, ids = route(torch.randn(5, 6, generator=torch.Generator().manual_seed(1)).to(dtype), 3, True)
        assert weights.dtype == torch.float32, f"weights must be fp32 for {dtype} logits, got {weights.dtype}"
        assert ids.dtype == torch.int32, f"ids must be int32 for {dtype} logits, got {ids.dtype}"
        assert tuple(weights.shape) == tuple(ids.shape) == (5, 3)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_softmax_is_computed_in_fp32(dtype):
    logits = (torch.randn(9, 8, generator=torch.Generator().manual_seed(2)) * 3).to(dtype)
    weights, ids = route(logits, 3, False)
    want = torch.softmax(logits.float(), dim=-1).gather(1, ids.long())
    close(weights, want, 1e-6)
    assert ids.tolist() == [row[:3] for row in reference_ids(logits)]


def test_descending_order():
    weights, ids = route(torch.tensor([[0.1, 0.3, 0.2, 0.9, -1.0]]), 5, False)
    assert ids.tolist() == [[3, 1, 2, 0, 4]]
    assert all(a >= b for a, b in zip(weights[0].tolist(), weights[0].tolist()[1:]))


def test_ties_go_to_the_lower_expert_id():
    _, ids = route(torch.tensor([[0.5, 2.0, 0.5, 2.0, 0.5, 2.0]]), 4, False)
    assert ids.tolist() == [[1, 3, 5, 0]]
    weights, ids = route(torch.zeros(3, 8), 3, True)
    assert ids.tolist() == [[0, 1, 2]] * 3
    close(weights, [[1 / 3] * 3] * 3)
    logits = torch.zeros(4, 64)
    logits[:, 40:50] = 2.0
    logits[2, 7] = 3.0
    _, ids = route(logits, 6, False)
    assert ids.tolist() == [[40, 41, 42, 43, 44, 45]] * 2 + [[7, 40, 41, 42, 43, 44]] + [[40, 41, 42, 43, 44, 45]]


def test_nearly_equal_probabilities_are_not_ties():
    # Distinct fp32 probabilities a few ulps apart: the larger one comes first even with the higher id.
    logits = torch.zeros(2, 8)
    logits[0, 6] = 3e-7
    logits[1, 7], logits[1, 2] = 1.0, 1.0 - 2e-7
    probs = torch.softmax(logits, dim=-1)
    assert probs[0, 6] > probs[0, 0] and probs[1, 7] > probs[1, 2], "the test's own premise"
    _, ids = route(logits, 3, False)
    assert ids.tolist() == [[6, 0, 1], [7, 2, 0]], f"logits={logits.tolist()}"


def test_ties_are_judged_on_the_fp32_probabilities():
    # fp32: the logits of experts 1 and 2 differ, but their fp32 probabilities are equal: a tie, lower id first.
    logits = torch.tensor([[0.0, -1e-3, -1e-3 + 1.2e-10, -1.0]])
    probs = torch.softmax(logits, dim=-1)
    assert logits[0, 1] < logits[0, 2] and probs[0, 1] == probs[0, 2], "the test's own premise"
    _, ids = route(logits, 3, False)
    assert ids.tolist() == [[0, 1, 2]], "equal fp32 probabilities: lower expert id first"
    # bf16: a softmax in bf16 would round experts 0 and 3 to the same value; in fp32 expert 3 is larger.
    logits = torch.zeros(1, 16)
    logits[0, 3], logits[0, 12] = 2 ** -8, 2 ** -7
    logits = logits.bfloat16()
    _, ids = route(logits, 3, False)
    assert ids.tolist() == [[12, 3, 0]], f"rank by the fp32 probabilities, logits={logits.float().tolist()}"


def test_renormalize_divides_the_chosen_by_their_sum():
    logits = torch.tensor([[2.0, 0.0, 1.0, -1.0], [0.0, 0.0, 3.0, 1.0]])
    plain, ids = route(logits, 2, False)
    probs = torch.softmax(logits, dim=-1)
    close(plain, probs.gather(1, ids.long()))
    assert float(plain.sum(-1).max()) < 0.99
    renormed, ids2 = route(logits, 2, True)
    assert torch.equal(ids, ids2)
    close(renormed, plain / plain.sum(-1, keepdim=True))
    close(renormed.sum(-1), [1.0, 1.0])


def test_large_logits_do_not_overflow():
    weights, ids = route(torch.tensor([[1000.0, 999.0, 0.0]]), 2, False)
    e = math.exp(-1.0)
    total = 1 + e + math.exp(-1000.0)
    assert ids.tolist() == [[0, 1]]
    close(weights, [[1 / total, e / total]])


def test_router_logits_are_not_modified():
    logits = torch.randn(6, 5, generator=torch.Generator().manual_seed(3)) * 4
    before = logits.clone()
    route(logits, 2, True)
    route(logits, 5, False)
    assert torch.equal(logits, before)


def test_no_tokens():
    for dtype in (torch.float32, torch.bfloat16):
        weights, ids = route(torch.zeros(0, 6, dtype=dtype), 2, True)
        assert tuple(weights.shape) == tuple(ids.shape) == (0, 2)
        assert weights.dtype == torch.float32 and ids.dtype == torch.int32


@pytest.mark.parametrize("top_k", [7, 0, True])
def test_no_tokens_still_checks_top_k(top_k):
    with pytest.raises(ValueError):
        sub.moe_topk_softmax(torch.zeros(0, 6), top_k, True)


def test_fp64_logits_still_give_fp32_weights():
    logits = torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    weights, ids = route(logits, 2, True)
    assert (weights.dtype, ids.dtype) == (torch.float32, torch.int32), f"got {weights.dtype}, {ids.dtype}"
    assert ids.tolist() == [[2, 0], [2, 0]]


def test_top_k_may_equal_the_number_of_experts():
    weights, ids = route(torch.tensor([[0.0, 2.0, 1.0]]), 3, True)
    assert ids.tolist() == [[1, 2, 0]]
    close(weights, torch.softmax(torch.tensor([[2.0, 1.0, 0.0]]), dim=-1))


@pytest.mark.parametrize("shape, top_k", [
    ((4,), 1), ((2, 3, 4), 1),                              # not [T, E]
    ((2, 4), 0), ((2, 4), 5), ((2, 4), -1),                 # outside [1, E]
    ((2, 4), True), ((2, 4), 2.0),                           # not an integer
    ((2, 0), 1),                                             # no experts to choose from
])
def test_bad_input_raises(shape, top_k):
    with pytest.raises(ValueError):
        sub.moe_topk_softmax(torch.zeros(shape), top_k, True)


def reference_ids(logits):
    """Every expert of each row by descending fp32 probability, lower id first among equals."""
    probs = torch.softmax(logits.float(), dim=-1).tolist()
    return [sorted(range(len(row)), key=lambda e: (-row[e], e)) for row in probs]


@pytest.mark.parametrize("seed", range(12))
def test_random_batches(seed):
    rng = random.Random(seed)
    num_experts = rng.choice([2, 4, 8, 16, 60])
    top_k = rng.randint(1, min(num_experts, 8))
    renormalize = seed % 2 == 0
    dtype = (torch.float32, torch.bfloat16, torch.float16)[seed % 3]
    # Coarse values make ties common; the others are continuous.
    rows = [[rng.choice([rng.randint(-3, 3) / 2, rng.gauss(0, 2)]) for _ in range(num_experts)]
            for _ in range(rng.randint(1, 12))]
    logits = torch.tensor(rows).to(dtype)
    weights, ids = route(logits, top_k, renormalize)
    want_ids = [row[:top_k] for row in reference_ids(logits)]
    assert ids.tolist() == want_ids
    want = torch.softmax(logits.float(), dim=-1).gather(1, torch.tensor(want_ids))
    if renormalize:
        want = want / want.sum(-1, keepdim=True)
    close(weights, want, 1e-6)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
