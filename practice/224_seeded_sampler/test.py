"""Tests of exercise 224: a batched sampler with a random stream per request."""
import torch

from submission import sample


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_example_greedy_and_top_k_one():
    logits = torch.tensor([[0.0, 5.0, 1.0], [2.0, 0.0, 0.0]])
    assert sample(logits, [0.0, 1.0], [0, 1], [1.0, 1.0], [None, gen(0)]) == [1, 0]


def test_example_same_seed_any_batch():
    torch.manual_seed(0)
    steps, others = torch.randn(8, 30), torch.randn(8, 30)
    g1, g2 = gen(7), gen(7)
    a = [sample(x[None], [0.8], [0], [0.9], [g1])[0] for x in steps]
    b = [sample(torch.stack([y, x]), [1.0, 0.8], [0, 0], [1.0, 0.9], [None, g2])[1] for x, y in zip(steps, others)]
    assert a == b


def test_greedy_rows_draw_no_random_numbers():
    logits = torch.randn(3, 20, generator=gen(1))
    g = gen(5)
    sample(logits, [0.0, 0.0, 0.0], [0, 0, 0], [1.0, 1.0, 1.0], [g, g, g])
    assert torch.equal(torch.rand(4, generator=g), torch.rand(4, generator=gen(5)))


def test_seeded_rows_ignore_their_neighbours():
    torch.manual_seed(2)
    steps = torch.randn(10, 5, 40)              # per step: my logits are row 4, the neighbours' rows 0..3
    mine = []
    for row, neighbours in [(0, [(1.0, 0, 1.0, None)]), (2, [(0.0, 0, 1.0, None), (1.3, 5, 0.8, 11)]),
                            (1, [(0.5, 3, 1.0, 3), (1.0, 0, 0.5, 4), (0.9, 0, 1.0, None)])]:
        params = list(neighbours)
        params.insert(row, (0.9, 10, 0.8, 99))
        gens = [None if p[3] is None else gen(p[3]) for p in params]
        out = []
        for step in steps:
            rows = list(step[:len(neighbours)])
            rows.insert(row, step[4])
            tokens = sample(torch.stack(rows), [p[0] for p in params], [p[1] for p in params],
                            [p[2] for p in params], gens)
            out.append(tokens[row])
        mine.append(out)
    assert mine[0] == mine[1] == mine[2]


def test_different_seeds_differ():
    logits = torch.zeros(1, 50)
    g = gen(1)
    a = [sample(logits, [1.0], [0], [1.0], [g])[0] for _ in range(10)]
    g = gen(2)
    b = [sample(logits, [1.0], [0], [1.0], [g])[0] for _ in range(10)]
    assert a != b


def test_masks_restrict_the_draws():
    logits = torch.tensor([[3.0, 2.9, 0.0, -1.0, 2.8]])
    g = gen(3)
    topk = {sample(logits, [1.0], [2], [1.0], [g])[0] for _ in range(200)}
    assert topk == {0, 1}
    probs = [0.5, 0.3, 0.15, 0.05]
    lp = torch.tensor([[float(torch.tensor(p).log()) for p in probs]])
    topp = {sample(lp, [1.0], [0], [0.7], [g])[0] for _ in range(300)}
    assert topp == {0, 1}                       # 0.5 < 0.7 keeps the 2nd; 0.8 >= 0.7 drops the rest


def test_top_k_keeps_ties_and_top_p_drops_at_equality():
    g = gen(8)
    tied = torch.tensor([[3.0, 2.0, 2.0, 0.0, 2.0]])
    assert {sample(tied, [1.0], [2], [1.0], [g])[0] for _ in range(300)} == {0, 1, 2, 4}
    flat = torch.zeros(1, 4)                    # probabilities exactly 0.25: two tokens reach top_p = 0.5
    assert len({sample(flat, [1.0], [0], [0.5], [g])[0] for _ in range(300)}) == 2


def test_draws_follow_the_filtered_distribution():
    probs = torch.tensor([0.05, 0.5, 0.15, 0.3])
    g = gen(4)
    counts = torch.zeros(4)
    for _ in range(3000):
        counts[sample(probs.log()[None], [1.0], [3], [1.0], [g])[0]] += 1
    freq = counts / counts.sum()
    want = torch.tensor([0.0, 0.5, 0.15, 0.3]) / 0.95
    assert torch.allclose(freq, want, atol=0.03), freq


def test_temperature_scales_logits():
    logits = torch.tensor([[0.0, 2.0]])
    g = gen(6)
    hot = sum(sample(logits, [8.0], [0], [1.0], [g])[0] == 0 for _ in range(1000)) / 1000
    cold = sum(sample(logits, [0.2], [0], [1.0], [g])[0] == 0 for _ in range(1000)) / 1000
    # P(token 0) = 1 / (1 + e^(2/T)): 0.438 at T=8, 0.0000454 at T=0.2
    assert 0.38 < hot < 0.50 and cold < 0.01


def test_a_temperature_below_1e5_is_greedy_and_draws_nothing():
    logits = torch.tensor([[0.0, 5.0, 1.0], [4.0, 0.0, 3.0]])
    g = gen(9)
    assert sample(logits, [1e-6, 9.9e-6], [0, 0], [1.0, 1.0], [g, g]) == [1, 0]
    assert torch.equal(g.get_state(), gen(9).get_state())
    assert sample(logits, [1e-5, 0.0], [0, 0], [1.0, 1.0], [g, None]) == [1, 0]   # 1e-5 itself samples
    assert not torch.equal(g.get_state(), gen(9).get_state())


def test_top_k_above_the_vocabulary_and_minus_one_keep_all():
    logits = torch.zeros(1, 3)
    g = gen(10)
    assert {sample(logits, [1.0], [5], [1.0], [g])[0] for _ in range(200)} == {0, 1, 2}
    assert {sample(logits, [1.0], [-1], [1.0], [g])[0] for _ in range(200)} == {0, 1, 2}


def test_top_p_ties_go_to_the_lower_token_id():
    logits = torch.tensor([[1.0, 3.0, 0.0, 3.0, 3.0]])       # three tokens tie for the top (p = 0.31 each)
    g = gen(12)
    assert {sample(logits, [1.0], [0], [1e-6], [g])[0] for _ in range(100)} == {1}
    assert {sample(logits, [1.0], [0], [0.5], [g])[0] for _ in range(300)} == {1, 3}


def test_top_p_sees_the_tempered_distribution_renormalized_after_top_k():
    lp = torch.tensor([[0.4, 0.3, 0.2, 0.1]]).log()
    g = gen(13)
    got = {sample(lp, [1.0], [2], [0.5], [g])[0] for _ in range(200)}
    assert got == {0}, ("probabilities [0.4, 0.3, 0.2, 0.1], top_k=2, top_p=0.5: top-k leaves 4/7 and 3/7 "
                        f"(renormalized), 4/7 >= 0.5 already, so only token 0 may be drawn; drew {sorted(got)}")
    got = {sample(lp, [0.5], [0], [0.45], [g])[0] for _ in range(200)}
    assert got == {0}, ("probabilities [0.4, 0.3, 0.2, 0.1], temperature 0.5, top_p=0.45: the tempered "
                        f"distribution starts with 0.16/0.30 = 0.53 >= 0.45, so only token 0 may be drawn; drew {sorted(got)}")
