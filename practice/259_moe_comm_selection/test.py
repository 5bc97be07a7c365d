"""Tests of exercise 259: vllm-ascend v0.11.0's per-step MoE communication rule and the MC2 capacity."""
import random

import pytest

import submission as sub

RULE = {"expert_parallel": True, "mc2_tokens_capacity": 64, "world_size": 16}


def choose(num_tokens, with_prefill, soc, **changes):
    return sub.select_moe_comm_method(num_tokens, with_prefill, soc, **{**RULE, **changes})


def test_example_capacity():
    assert sub.mc2_tokens_capacity(64, [], 2) == 64
    assert sub.mc2_tokens_capacity(64, [1, 2, 4, 8, 16], 3) == 18


def test_example_rule():
    assert choose(64, False, "A3") == "mc2"
    assert choose(65, False, "A3") == "alltoall"
    assert choose(64, False, "A2", world_size=8) == "allgather"
    assert choose(65, True, "A2") == "naive_multicast"


def test_capacity_takes_the_largest_capture_size_in_any_order():
    assert sub.mc2_tokens_capacity(4, [8, 1, 32, 2], 1) == 32


def test_capacity_without_graphs_is_capped_at_512():
    assert sub.mc2_tokens_capacity(600, [], 1) == 512
    assert sub.mc2_tokens_capacity(300, [], 2, uniform_decode_query_len=2) == 512


def test_capacity_counts_the_decode_query_length():
    assert sub.mc2_tokens_capacity(10, [], 1, uniform_decode_query_len=3) == 30


def test_capacity_is_rounded_up_to_a_multiple_of_tp():
    assert sub.mc2_tokens_capacity(5, [], 2) == 6
    assert sub.mc2_tokens_capacity(512, [], 3) == 513        # the cap first, then the rounding
    assert sub.mc2_tokens_capacity(7, [], 1) == 7


def test_a_step_exactly_at_the_capacity_uses_mc2():
    assert choose(64, False, "A3") == "mc2" and choose(64, False, "A2") == "mc2"


def test_a2_needs_sixteen_ranks_for_mc2():
    assert choose(8, False, "A2", world_size=15) == "allgather"
    assert choose(8, False, "A2", world_size=16) == "mc2"


def test_a3_has_no_world_size_condition():
    assert choose(8, False, "A3", world_size=2) == "mc2"


def test_a2_above_the_capacity():
    assert choose(65, False, "A2") == "allgather"
    assert choose(65, False, "A2", quant_type="w4a8_dynamic") == "alltoall"
    assert choose(65, False, "A2", quant_type="w8a8_dynamic") == "allgather"


def test_prefill_turns_only_all_gather_into_the_naive_multicast():
    assert choose(65, True, "A2") == "naive_multicast"
    assert choose(65, True, "A2", sequence_parallel=True) == "allgather"
    assert choose(65, True, "A3") == "alltoall"                  # A3 above the capacity: all-to-all, prefill or not
    assert choose(8, True, "A3") == "mc2"
    assert choose(8, True, "A2") == "mc2"


def test_without_expert_parallelism_all_gather_whatever_the_chip():
    assert choose(8, False, "A3", expert_parallel=False) == "allgather"
    assert choose(8, False, "310P", expert_parallel=False) == "allgather"
    assert choose(8, True, "310P", expert_parallel=False) == "naive_multicast"


def test_an_unknown_chip_raises_naming_it():
    with pytest.raises(ValueError, match="310P"):
        choose(8, False, "310P")
    with pytest.raises(ValueError, match="A5"):
        choose(100, True, "A5")


@pytest.mark.parametrize("seed", range(8))
def test_random_steps(seed):
    rng = random.Random(seed)
    for _ in range(40):
        num_tokens, capacity = rng.randint(1, 600), rng.choice([16, 64, 128, 512])
        with_prefill, soc = rng.random() < 0.5, rng.choice(["A2", "A3"])
        world, quant = rng.choice([2, 8, 16, 32]), rng.choice([None, "w4a8_dynamic", "w8a8_dynamic"])
        sp = rng.random() < 0.3
        repro = {"num_tokens": num_tokens, "with_prefill": with_prefill, "soc_version": soc,  # noqa: F841
                 "mc2_tokens_capacity": capacity, "world_size": world, "quant_type": quant, "sequence_parallel": sp}
        fits = num_tokens <= capacity
        if soc == "A3":
            want = "mc2" if fits else "alltoall"
        elif fits and world >= 16:
            want = "mc2"
        else:
            want = "alltoall" if quant == "w4a8_dynamic" else "allgather"
        if want == "allgather" and with_prefill and not sp:
            want = "naive_multicast"
        got = sub.select_moe_comm_method(num_tokens, with_prefill, soc, expert_parallel=True,
                                         mc2_tokens_capacity=capacity, world_size=world, quant_type=quant,
                                         sequence_parallel=sp)
        assert got == want, f"seed={seed}: {repro}"
