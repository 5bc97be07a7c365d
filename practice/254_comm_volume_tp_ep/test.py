"""Tests of exercise 254: communication volume per decode token for TP and the two EP exchanges."""
import random

import pytest

import submission as sub

MIXTRAL = {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000,
           "num_local_experts": 8, "num_experts_per_tok": 2}


def test_example_tp():
    assert sub.decode_comm_bytes(MIXTRAL, 2, "tp") == pytest.approx(
        {"embedding all-reduce": 8192.0, "logits all-gather (fp32)": 64000.0,
         "attention all-reduce": 262144.0, "MLP / experts all-reduce": 262144.0})


def test_example_ep():
    assert sub.decode_comm_bytes(MIXTRAL, 2, "ep-alltoall")["all-to-all out + back"] == pytest.approx(524416.0)
    assert sub.decode_comm_bytes(MIXTRAL, 2, "ep-allgather")["all-gather + reduce-scatter"] == pytest.approx(262400.0)


def test_ep_keys():
    assert set(sub.decode_comm_bytes(MIXTRAL, 4, "ep-alltoall")) == {
        "embedding all-reduce", "logits all-gather (fp32)", "attention all-reduce", "all-to-all out + back",
        "slice all-gather"}
    assert set(sub.decode_comm_bytes(MIXTRAL, 4, "ep-allgather")) == {
        "embedding all-reduce", "logits all-gather (fp32)", "attention all-reduce", "all-gather + reduce-scatter",
        "slice all-gather"}


def test_one_rank_sends_nothing():
    assert set(sub.decode_comm_bytes(MIXTRAL, 1, "ep-alltoall").values()) == {0}


def test_logits_stay_fp32():
    a = sub.decode_comm_bytes(MIXTRAL, 4, "tp", elem_bytes=2)
    b = sub.decode_comm_bytes(MIXTRAL, 4, "tp", elem_bytes=4)
    assert a["logits all-gather (fp32)"] == b["logits all-gather (fp32)"] == pytest.approx(0.75 * 32000 * 4)
    assert b["attention all-reduce"] == pytest.approx(2 * a["attention all-reduce"])


def test_qwen2_moe_reads_num_experts():
    cfg = {"hidden_size": 2048, "num_hidden_layers": 24, "vocab_size": 151936, "num_experts": 60,
           "num_experts_per_tok": 4}
    got = sub.decode_comm_bytes(cfg, 4, "ep-alltoall")
    assert got["all-to-all out + back"] == pytest.approx(24 * 4 * 0.75 * (2 * 4096 + 4))


DENSE = {"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100}


def test_tp_needs_no_experts():
    assert sub.decode_comm_bytes(DENSE, 2, "tp") == pytest.approx(
        {"embedding all-reduce": 128.0, "logits all-gather (fp32)": 200.0, "attention all-reduce": 256.0,
         "MLP / experts all-reduce": 256.0})


@pytest.mark.parametrize("cfg, n, scheme", [
    (MIXTRAL, 2, "pp"), (MIXTRAL, 1, "pp"),
    (MIXTRAL, 0, "tp"), (MIXTRAL, -2, "tp"),
    (DENSE, 2, "ep-alltoall"), (DENSE, 1, "ep-alltoall"),      # one rank: still no experts to place
    ({**DENSE, "num_experts": 0}, 2, "ep-allgather"),
])
def test_bad_input_raises(cfg, n, scheme):
    try:
        result = sub.decode_comm_bytes(cfg, n, scheme)
    except ValueError:
        return
    pytest.fail(f"decode_comm_bytes({cfg}, {n}, {scheme!r}) returned {result!r}; expected a ValueError")


@pytest.mark.parametrize("seed", range(10))
def test_random_configs(seed):
    rng = random.Random(seed)
    H, L, V = rng.choice([64, 896, 4096]), rng.randint(1, 40), rng.randint(100, 160000)
    E, K = rng.choice([4, 8, 60]), rng.randint(1, 4)
    n, b = rng.choice([2, 3, 4, 8]), rng.choice([1, 2, 4])
    cfg = {"hidden_size": H, "num_hidden_layers": L, "vocab_size": V, "num_local_experts": E,
           "num_experts_per_tok": K}
    r, h = (n - 1) / n, H * b
    case = f"seed={seed}: config={cfg}, n={n}, elem_bytes={b}"
    common = {"embedding all-reduce": 2 * r * h, "logits all-gather (fp32)": r * V * 4,
              "attention all-reduce": L * 2 * r * h}
    assert sub.decode_comm_bytes(cfg, n, "tp", b) == pytest.approx(
        {**common, "MLP / experts all-reduce": L * 2 * r * h}), f"{case}, scheme 'tp'"
    assert sub.decode_comm_bytes(cfg, n, "ep-alltoall", b) == pytest.approx(
        {**common, "all-to-all out + back": L * K * r * (2 * h + 4), "slice all-gather": L * r * h}), (
        f"{case}, scheme 'ep-alltoall'")
    assert sub.decode_comm_bytes(cfg, n, "ep-allgather", b) == pytest.approx(
        {**common, "all-gather + reduce-scatter": L * r * (2 * h + 8 * K), "slice all-gather": L * r * h}), (
        f"{case}, scheme 'ep-allgather'")
