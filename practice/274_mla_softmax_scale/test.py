"""Tests of exercise 274: the MLA softmax scale."""
import math
import random

import pytest

import submission as sub

DEEPSEEK_V3 = {"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "head_dim": 64}
YARN = {"rope_type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1}


def expected(qk_head_dim, factor, mscale_all_dim):
    m = 1.0 if factor <= 1 else 0.1 * mscale_all_dim * math.log(factor) + 1.0
    return qk_head_dim ** -0.5 * m * m


def test_example_qk_head_dim():
    assert sub.mla_qk_head_dim(DEEPSEEK_V3) == 192


def test_example_plain():
    assert sub.mla_softmax_scale(192, None) == pytest.approx(0.07216878364870322, rel=1e-12)


def test_example_deepseek_v3_yarn():
    assert sub.mla_softmax_scale(192, YARN) == pytest.approx(0.1352337788608801, rel=1e-12)


def test_qk_head_dim_is_nope_plus_rope():
    # v_head_dim and head_dim both differ from the answer here
    config = {"qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 12, "head_dim": 8}
    assert sub.mla_qk_head_dim(config) == 24
    assert sub.mla_qk_head_dim({"qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32}) == 48


def test_returns_a_float():
    for scaling in (None, YARN):
        got = sub.mla_softmax_scale(192, scaling)
        assert isinstance(got, float), f"rope_scaling={scaling}: expected a float, got {got!r}"


def test_the_correction_is_squared():
    scaling = {"rope_type": "yarn", "factor": 4.0, "mscale_all_dim": 0.707}
    m = 0.1 * 0.707 * math.log(4.0) + 1.0
    assert sub.mla_softmax_scale(64, scaling) == pytest.approx(64 ** -0.5 * m ** 2, rel=1e-12)


def test_natural_log():
    scaling = {"rope_type": "yarn", "factor": 1000.0, "mscale_all_dim": 1.0}
    assert sub.mla_softmax_scale(100, scaling) == pytest.approx(0.1 * (0.1 * math.log(1000.0) + 1) ** 2, rel=1e-12)


def test_mscale_all_dim_not_mscale():
    scaling = {"rope_type": "yarn", "factor": 40, "mscale": 0.5, "mscale_all_dim": 1.0}
    assert sub.mla_softmax_scale(192, scaling) == pytest.approx(expected(192, 40, 1.0), rel=1e-12)
    scaling = {"rope_type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 0.5}
    assert sub.mla_softmax_scale(192, scaling) == pytest.approx(expected(192, 40, 0.5), rel=1e-12)


@pytest.mark.parametrize("scaling", [
    {"rope_type": "default", "factor": 40, "mscale_all_dim": 1.0},   # a default RoPE: no correction
    {"factor": 40, "mscale_all_dim": 1.0},                           # no rope_type: default
    {"type": "yarn", "factor": 40, "mscale_all_dim": 1.0},           # only "rope_type" is read
    {"rope_type": "yarn", "factor": 40, "mscale": 1.0},              # no mscale_all_dim
    {"rope_type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 0},
    {"rope_type": "yarn", "factor": 40, "mscale_all_dim": None},
    {},
])
def test_no_correction(scaling):
    repro = {"qk_head_dim": 192, "rope_scaling": scaling}  # noqa: F841
    assert sub.mla_softmax_scale(192, scaling) == pytest.approx(192 ** -0.5, rel=1e-12)


@pytest.mark.parametrize("factor", [1, 1.0, 0.5, 0.25])
def test_factor_at_most_one_gives_no_correction(factor):
    scaling = {"rope_type": "yarn", "factor": factor, "mscale_all_dim": 1.0}
    repro = {"qk_head_dim": 192, "rope_scaling": scaling}  # noqa: F841
    assert sub.mla_softmax_scale(192, scaling) == pytest.approx(192 ** -0.5, rel=1e-12)


def test_other_rope_types_get_the_correction_too():
    for kind in ("yarn", "deepseek_yarn", "linear"):
        scaling = {"rope_type": kind, "factor": 8, "mscale_all_dim": 0.8}
        repro = {"qk_head_dim": 96, "rope_scaling": scaling}  # noqa: F841
        assert sub.mla_softmax_scale(96, scaling) == pytest.approx(expected(96, 8, 0.8), rel=1e-12)


def test_the_scaling_dict_is_not_modified():
    scaling = dict(YARN)
    sub.mla_softmax_scale(192, scaling)
    assert scaling == YARN


@pytest.mark.parametrize("seed", range(10))
def test_random(seed):
    rng = random.Random(seed)
    nope, rope = rng.choice([16, 32, 64, 128]), rng.choice([8, 16, 32, 64])
    config = {"qk_nope_head_dim": nope, "qk_rope_head_dim": rope, "v_head_dim": rng.choice([16, 64, 128]),
              "head_dim": rope}
    scaling = {"rope_type": "yarn", "factor": rng.choice([0.5, 2, 4, 16, 40, 64]), "mscale": rng.choice([0.707, 1.0]),
               "mscale_all_dim": rng.choice([0.707, 1.0, 0.5])}
    repro = {"config": config, "rope_scaling": scaling}  # noqa: F841
    dim = sub.mla_qk_head_dim(config)
    assert dim == nope + rope
    assert sub.mla_softmax_scale(dim, scaling) == pytest.approx(
        expected(nope + rope, scaling["factor"], scaling["mscale_all_dim"]), rel=1e-12)


@pytest.mark.parametrize("qk_head_dim", [0, -192, 192.0, True, "192", None])
def test_bad_qk_head_dim(qk_head_dim):
    for scaling in (None, YARN):
        with pytest.raises(ValueError):
            sub.mla_softmax_scale(qk_head_dim, scaling)
