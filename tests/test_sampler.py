"""Sampler: parameter validation, top-k / top-p masks on hand-computed cases, seeded determinism."""
from __future__ import annotations

import math

import pytest
import torch

from mini_platform.sampler import SamplingParams, apply_top_k, apply_top_p, check_logits, make_generator, sample

NEG = float("-inf")


def sample_with(logits: torch.Tensor, params: list[SamplingParams], generators: list) -> list[int]:
    """``sample`` as the engine calls it: the per-row lists taken from each request's parameters."""
    return sample(logits, [p.temperature for p in params], [p.top_k for p in params], [p.top_p for p in params],
                  generators)


@pytest.mark.parametrize("kwargs, name", [
    (dict(temperature=-0.1), "temperature"), (dict(temperature=float("nan")), "temperature"),
    (dict(temperature=float("inf")), "temperature"), (dict(temperature="1"), "temperature"),
    (dict(top_k=-2), "top_k"), (dict(top_k=2.5), "top_k"), (dict(top_k=True), "top_k"),
    (dict(top_p=0.0), "top_p"), (dict(top_p=1.01), "top_p"), (dict(top_p=-1), "top_p"),
    (dict(max_tokens=0), "max_tokens"), (dict(max_tokens=1.0), "max_tokens"),
    (dict(seed=1.5), "seed"), (dict(stop_token_ids=[1, -2]), "stop_token_ids"),
    (dict(stop_token_ids=["a"]), "stop_token_ids"), (dict(stop_token_ids=2), "stop_token_ids"),
    (dict(ignore_eos=1), "ignore_eos"),
])
def test_out_of_range_parameters_are_rejected_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SamplingParams(**kwargs)


def test_valid_parameters():
    p = SamplingParams(temperature=0, top_k=-1, top_p=1, max_tokens=1, seed=0, stop_token_ids=(3, 4))
    assert p.greedy and p.stop_token_ids == [3, 4]
    assert not SamplingParams().greedy


def test_top_k_mask_hand_computed():
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0], [1.0, 3.0, 2.0, 0.0], [5.0, 4.0, 4.0, 1.0], [0.0, 1.0, 2.0, 3.0]])
    out = apply_top_k(logits, torch.tensor([2, 0, 2, 9]))
    assert out.tolist() == [[NEG, 3.0, 2.0, NEG],       # the two largest
                            [1.0, 3.0, 2.0, 0.0],       # 0 = keep all
                            [5.0, 4.0, 4.0, NEG],       # a tie with the k-th value is kept
                            [0.0, 1.0, 2.0, 3.0]]       # k > vocab keeps all


def test_top_p_mask_hand_computed():
    probs = [0.05, 0.5, 0.15, 0.3]        # sorted: 0.5, 0.3, 0.15, 0.05; mass before: 0, 0.5, 0.8, 0.95
    logits = torch.tensor([[math.log(p) for p in probs]] * 4)
    out = apply_top_p(logits, torch.tensor([0.4, 0.7, 0.9, 1.0]))
    kept = (out > NEG).tolist()
    assert kept == [[False, True, False, False],     # 0.5 alone reaches 0.4
                    [False, True, False, True],      # 0.5 + 0.3 reach 0.7
                    [False, True, True, True],
                    [True, True, True, True]]
    assert torch.equal(out[1, [1, 3]], logits[1, [1, 3]])   # survivors keep their logits


def test_top_p_always_keeps_the_most_likely_token():
    logits = torch.tensor([[0.0, 10.0, 0.0]])
    assert (apply_top_p(logits, torch.tensor([1e-6])) > NEG).tolist() == [[False, True, False]]


def test_top_p_ties_break_towards_the_lower_token_id():
    logits = torch.tensor([[1.0, 3.0, 0.0, 3.0, 3.0]])        # three tokens tie for the top
    assert (apply_top_p(logits, torch.tensor([1e-6])) > NEG).tolist() == [[False, True, False, False, False]]
    assert (apply_top_p(logits, torch.tensor([0.5])) > NEG).tolist() == [[False, True, False, True, False]]


def test_greedy_rows_take_the_argmax_and_filters_restrict_samples():
    torch.manual_seed(0)
    logits = torch.randn(4, 50)
    params = [SamplingParams(temperature=0), SamplingParams(temperature=1.5, top_k=1),
              SamplingParams(temperature=0.7, top_p=1e-4), SamplingParams(temperature=1.0, top_k=3)]
    top3 = set(logits[3].topk(3).indices.tolist())
    for _ in range(20):
        tokens = sample_with(logits, params, [None] * 4)
        assert tokens[:3] == logits[:3].argmax(-1).tolist()
        assert tokens[3] in top3


def test_seeded_sampling_does_not_depend_on_the_batch():
    torch.manual_seed(1)
    steps = [torch.randn(5, 40) for _ in range(6)]
    mine = SamplingParams(temperature=1.0, top_p=0.9, seed=42)

    def run(row: int, others: list[SamplingParams]) -> list[int]:
        """My tokens over 6 steps when I sit at ``row`` of a batch with ``others`` (rows 0.. of each step)."""
        params = others[:row] + [mine] + others[row:]
        gens = [None if p.seed is None else make_generator(p.seed) for p in params]
        tokens = []
        for logits in steps:
            rows = list(logits[:len(others)])
            batch = torch.stack(rows[:row] + [logits[4]] + rows[row:])
            tokens.append(sample_with(batch, params, gens)[row])
        return tokens

    alone = run(0, [])
    assert run(2, [SamplingParams(temperature=0.5), SamplingParams(temperature=0, seed=3)]) == alone
    assert run(1, [SamplingParams(seed=7, top_k=5), SamplingParams(), SamplingParams(seed=42)]) == alone
    gen = make_generator(43)
    assert [sample_with(logits[4:5], [mine], [gen])[0] for logits in steps] != alone   # another seed, other tokens


def test_a_tiny_temperature_acts_as_greedy_without_overflow():
    logits = torch.tensor([[5.0, 1.0, -3.0, 4.0]])
    for t in (1e-30, 1e-38, 1e-45):
        assert sample(logits, [t], [0], [1.0], [make_generator(0)]) == [0]


def test_temperature_flattens_the_distribution():
    logits = torch.tensor([[2.0, 0.0]])
    gen = make_generator(0)
    cold = sum(sample(logits, [0.25], [0], [1.0], [gen])[0] for _ in range(400))
    hot = sum(sample(logits, [4.0], [0], [1.0], [gen])[0] for _ in range(400))
    # P(token 1) = 1 / (1 + e^(2/T)): about 0.0003 at T=0.25 and 0.38 at T=4.
    assert cold < 10 and 110 < hot < 190


def test_greedy_rows_draw_no_random_numbers():
    logits = torch.tensor([[0.0, 3.0, 1.0], [1.0, 0.0, 2.0]])
    gen, fresh = make_generator(5), make_generator(5)
    assert sample(logits, [0.0, 9e-6], [0, 0], [1.0, 1.0], [gen, gen]) == [1, 2]
    assert torch.equal(gen.get_state(), fresh.get_state())
    sample(logits, [1e-5, 0.0], [0, 0], [1.0, 1.0], [gen, None])      # 1e-5 itself samples
    assert not torch.equal(gen.get_state(), fresh.get_state())


def test_nan_logits_are_named_by_row():
    check_logits(torch.zeros(2, 4))
    with pytest.raises(FloatingPointError, match=r"row\(s\) \[1\]"):
        check_logits(torch.tensor([[0.0, 1.0], [float("nan"), 0.0]]))
